"""Plans against the node they are planned on (catalog/hostfit.py), PD placeholder defaults for a
one-machine PD plan, and the H1 sentence for custom models."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from vllm_deploy_wizard.catalog import Selection, load_catalog, synthesize
from vllm_deploy_wizard.catalog.constraints import hardware_listing
from vllm_deploy_wizard.catalog.custom import resolve_model
from vllm_deploy_wizard.catalog.hostfit import HostCapacity, host_fit_warnings, suggested_gib
from vllm_deploy_wizard.catalog.plan import LaunchPlan, PlanProcess
from vllm_deploy_wizard.catalog.render import plan_text
from vllm_deploy_wizard.common.parallelism import devices_on_node

GIB = 2**30
#: A small CPU node: 23.5 GiB of RAM, 2 CPUs.
SMALL_CPU_NODE = HostCapacity(ram_bytes=int(23.5 * GIB), available_bytes=23 * GIB, cpus=2)
BIG_GPU_NODE = HostCapacity(ram_bytes=2048 * GIB, available_bytes=1900 * GIB, cpus=224)


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


@pytest.fixture()
def tiny(cat, tmp_path: Path):
    """A custom dense model folder (no recipe) and the catalog that knows it."""
    (tmp_path / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
        "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 1000, "torch_dtype": "float32"}))
    recipe = resolve_model(cat, str(tmp_path))
    return cat.with_recipe(recipe), recipe.hf_id


def _lmcache_args(plan: LaunchPlan) -> list[str]:
    return next(p.argv for p in plan.processes if p.name == "kv_offload:lmcache")


def test_lmcache_l1_above_a_small_cpu_nodes_ram_is_warned_with_half_the_ram(tiny) -> None:
    cat, model = tiny
    plan = synthesize(cat, Selection(model=model, hardware="xeon6", kv_offload="lmcache"))
    argv = _lmcache_args(plan)
    assert argv[argv.index("--l1-size-gb") + 1] == "512"  # the pinned companion command is kept
    warnings = host_fit_warnings(cat, plan, SMALL_CPU_NODE)
    l1 = [w for w in warnings if "--l1-size-gb" in w]
    assert l1 == ["warning: LMCache L1 size 512 GiB (--l1-size-gb) exceeds this node's RAM (23.5 GiB usable for "
                  "offload): set --l1-size-gb below the available RAM, e.g. 11 and --l1-init-size-gb at most 11 (`plan "
                  "--l1-size-gb 11`, or the kv_offload:lmcache process of the plan file; launch refuses an L1 "
                  "above the available RAM)"]
    workers = [w for w in warnings if "--max-cpu-workers" in w]
    assert workers == ["warning: LMCache --max-cpu-workers 8 is more than this node's 2 CPUs: set it to at "
                       "most 2 (`plan --max-cpu-workers 2`, or the kv_offload:lmcache process of the plan file)"]


def test_lmcache_fits_a_big_node_and_unknown_host_says_nothing(cat) -> None:
    plan = synthesize(cat, Selection(model="Qwen/Qwen3-32B", hardware="h200", kv_offload="lmcache"))
    assert host_fit_warnings(cat, plan, BIG_GPU_NODE) == []
    assert host_fit_warnings(cat, plan, HostCapacity()) == []


def test_lmcache_above_the_recipes_75_percent_rule_on_a_gpu_node(cat) -> None:
    plan = synthesize(cat, Selection(model="Qwen/Qwen3-32B", hardware="h200", kv_offload="lmcache"))
    host = HostCapacity(ram_bytes=600 * GIB, available_bytes=590 * GIB, cpus=64)
    [w] = host_fit_warnings(cat, plan, host)
    assert "is more than 75% of this node's RAM (600.0 GiB" in w
    assert "set --l1-size-gb to at most 450 " in w  # floor(0.75 × 600); init 20 ≤ 450 is not mentioned
    assert "--l1-init-size-gb" not in w


def test_suggestion_never_exceeds_free_ram_and_cgroup_limit_caps_usable_ram(cat) -> None:
    plan = synthesize(cat, Selection(model="Qwen/Qwen3-32B", hardware="h200", kv_offload="lmcache"))
    busy = HostCapacity(ram_bytes=1024 * GIB, available_bytes=100 * GIB)
    [w] = host_fit_warnings(cat, plan, busy)
    assert "exceeds the RAM available on this node now (100.0 GiB available of 1024.0 GiB usable for offload)" in w
    assert "e.g. 100 " in w
    capped = HostCapacity(ram_bytes=2048 * GIB, cgroup_limit_bytes=64 * GIB)
    assert capped.usable_bytes == 64 * GIB
    [w] = host_fit_warnings(cat, plan, capped)
    assert "exceeds this node's RAM (64.0 GiB usable for offload)" in w and "e.g. 48 " in w
    assert suggested_gib(HostCapacity(ram_bytes=GIB // 2), 0.5) == 0
    [w] = host_fit_warnings(cat, plan, HostCapacity(ram_bytes=GIB // 2))
    assert "no RAM to spare for an LMCache L1 pool" in w


def test_simple_offload_counts_ranks_on_the_node(cat) -> None:
    plan = synthesize(cat, Selection(model="Qwen/Qwen3-32B", hardware="h200", kv_offload="simple"))
    serve = next(p for p in plan.processes if p.role == "serve")
    ranks = devices_on_node(serve.argv) or 1
    assert host_fit_warnings(cat, plan, HostCapacity(ram_bytes=(300 * ranks) * GIB)) == []
    [w] = host_fit_warnings(cat, plan, HostCapacity(ram_bytes=(200 * ranks) * GIB))
    assert w.startswith(f"warning: KV offload CPU tier SimpleCPUOffloadConnector 220.0 GiB per rank × {ranks} rank")
    assert f"exceeds this node's RAM ({200 * ranks:.1f} GiB usable for offload)" in w
    per = 150  # floor(0.75 × 200·ranks GiB) over the ranks
    assert f"lower cpu_bytes_to_use_per_rank in --kv-transfer-config, e.g. {per * GIB} ({per} GiB)" in w


def test_offloading_connector_total_is_split_over_nodes(cat) -> None:
    config = {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
              "kv_connector_extra_config": {"cpu_bytes_to_use": 512 * GIB, "blocks_per_chunk": 4}}
    argv = ["vllm", "serve", "m", "-tp", "16", "--nnodes", "2", "--kv-transfer-config", json.dumps(config)]
    plan = LaunchPlan(deploy_type="multi_node", install_mode="pip", resolved={"hardware": "h200"},
                      processes=[PlanProcess(name="vllm-head", role="head", argv=argv)])
    # 256 GiB per node: fits 512 GiB of RAM at 75% (384), not 300 GiB (225)
    assert host_fit_warnings(cat, plan, HostCapacity(ram_bytes=512 * GIB)) == []
    [w] = host_fit_warnings(cat, plan, HostCapacity(ram_bytes=300 * GIB))
    assert "OffloadingConnector 512.0 GiB over 2 nodes is more than 75%" in w
    assert f"e.g. {450 * GIB} (450 GiB)" in w  # total over both nodes: 2 × floor(0.75 × 300)


def test_host_capacity_from_an_inventory_by_attribute() -> None:
    inv = SimpleNamespace(host=SimpleNamespace(ram_bytes=None, mem_total_bytes=32 * GIB, mem_available_bytes=20 * GIB,
                                               cgroup_limit_bytes=None),
                          cpu=SimpleNamespace(usable_cpus=None, logical_cpus=4))
    assert HostCapacity.from_inventory(inv) == HostCapacity(ram_bytes=32 * GIB, available_bytes=20 * GIB, cpus=4)
    assert HostCapacity.from_inventory(object()) == HostCapacity()


def test_colocated_pd_plan_defaults_pool_addresses_to_this_machine(cat) -> None:
    plan = synthesize(cat, Selection(model="Qwen/Qwen3-32B", strategy="pd_cluster"))
    assert plan.pd_pool_nodes == {"prefill": 0, "decode": 0}
    assert "$PREFILL_NODE_1" in plan.processes[0].env.values()  # command text as the builder prints it
    assert plan.placeholder_defaults == {"ROUTER_HOST": "localhost", "ROUTER_PORT": "30000",
                                         "PREFILL_NODE_1": "127.0.0.1", "DECODE_NODE_1": "127.0.0.1"}
    assert set(plan.placeholders) <= set(plan.placeholder_defaults)  # launchable with the defaults alone
    assert ("# fill before launch: $DECODE_NODE_1 (default 127.0.0.1) $PREFILL_NODE_1 (default 127.0.0.1) "
            "$ROUTER_HOST (default localhost) $ROUTER_PORT (default 30000)") in plan_text(plan)


def test_pd_pool_on_its_own_node_gets_no_address_default(cat) -> None:
    sel = Selection.model_validate({"model": "Qwen/Qwen3-32B", "strategy": "pd_cluster",
                                    "pd": {"prefill": {"nodes": 1}, "decode": {"nodes": 0}}})
    plan = synthesize(cat, sel)
    assert plan.placeholder_defaults == {"ROUTER_HOST": "localhost", "ROUTER_PORT": "30000"}


def test_h1_sentence_names_custom_models_for_a_custom_model(tiny) -> None:
    cat, model = tiny
    plan = synthesize(cat, Selection(model=model, hardware="xeon6"))
    h1 = [n for n in plan.notes if "(rule H1)" in n]
    assert h1 == ["warning: Xeon 6 (xeon6) is a restricted profile not verified for custom models like this one "
                  "(rule H1)"]
    recipe = cat.recipe(model)
    assert hardware_listing(cat, recipe, "xeon6", detected="xeon6") == (
        "unlisted", "Xeon 6 is a restricted profile not verified for custom models like this one (rule H1)")


def test_h1_sentence_names_the_recipe_for_a_recipe(cat) -> None:
    recipe = cat.recipe("Qwen/Qwen3-32B")
    assert not recipe.is_custom and "xeon6" not in recipe.meta.hardware
    plan = synthesize(cat, Selection(model="Qwen/Qwen3-32B", hardware="xeon6"))
    assert "warning: Xeon 6 (xeon6) is a restricted profile this recipe does not list (rule H1)" in plan.notes
