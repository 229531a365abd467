"""Offload and companion sizes from the node a plan is for (catalog/host_sizing.py, docs/fit.md §9)."""

from __future__ import annotations

import json

import pytest

from vllm_deploy_wizard.catalog import Selection, load_catalog, synthesize
from vllm_deploy_wizard.catalog.hostfit import HostCapacity, host_fit_warnings
from vllm_deploy_wizard.catalog.planner import plan_selection
from vllm_deploy_wizard.common.byte_sizes import mooncake_size_bytes
from vllm_deploy_wizard.common.flags import last_flag_value
from vllm_deploy_wizard.common.parallelism import devices_on_node

GIB = 2**30
#: A small GPU node: 23.5 GiB of RAM, 20 GiB free, 4 CPUs.
SMALL_NODE = HostCapacity(ram_bytes=int(23.5 * GIB), available_bytes=20 * GIB, cpus=4)
BIG_NODE = HostCapacity(ram_bytes=2048 * GIB, available_bytes=1900 * GIB, cpus=224)


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def _proc(plan, prefix: str):
    return next(p for p in plan.processes if p.name.startswith(prefix))


def _serve(plan):
    return next(p for p in plan.processes if p.role == "serve")


def _extra(argv: list[str]) -> dict:
    return json.loads(last_flag_value(argv, "--kv-transfer-config"))["kv_connector_extra_config"]


def test_lmcache_server_is_sized_to_the_detected_node_and_the_fix_key_has_nothing_left(cat) -> None:
    sel = Selection(model="Qwen/Qwen3-8B", hardware="h200", kv_offload="lmcache")
    planned = plan_selection(cat, sel, SMALL_NODE)
    argv = _proc(planned.plan, "kv_offload:lmcache").argv
    n = int(0.75 * 23.5)  # 75 % of the usable RAM (17 GiB), below the 20 GiB free
    assert last_flag_value(argv, "--l1-size-gb") == str(n)
    assert last_flag_value(argv, "--l1-init-size-gb") == "17"  # the builder's 20 lowered with it
    assert last_flag_value(argv, "--max-cpu-workers") == "4"
    assert any(f"LMCache --l1-size-gb {n}" in note and "512" in note for note in planned.plan.notes)
    assert planned.fixes == {} and not [w for w in planned.warnings if "LMCache" in w]
    off_node = plan_selection(cat, sel)  # planned for another machine: the builder's text
    assert last_flag_value(_proc(off_node.plan, "kv_offload:lmcache").argv, "--l1-size-gb") == "512"


def test_the_persons_l1_size_is_kept_and_still_warned(cat) -> None:
    sel = Selection(model="Qwen/Qwen3-8B", hardware="h200", kv_offload="lmcache", companion_args={"l1_size_gb": 64})
    planned = plan_selection(cat, sel, SMALL_NODE)
    assert last_flag_value(_proc(planned.plan, "kv_offload:lmcache").argv, "--l1-size-gb") == "64"
    assert planned.fixes.get("l1_size_gb") == 17
    assert any("LMCache L1 size 64 GiB" in w for w in planned.warnings)


def test_a_big_node_keeps_the_builders_sizes(cat) -> None:
    planned = plan_selection(cat, Selection(model="Qwen/Qwen3-8B", hardware="h200", kv_offload="lmcache"), BIG_NODE)
    assert last_flag_value(_proc(planned.plan, "kv_offload:lmcache").argv, "--l1-size-gb") == "512"
    assert not [n for n in planned.plan.notes if n.startswith("sized for this node")]


@pytest.mark.parametrize("kv, key, expected_gib", [
    ("offloading_cpu", "cpu_bytes_to_use", 17),  # the total over the node's ranks
    ("simple", "cpu_bytes_to_use_per_rank", 17 // 8),  # per rank: 8 ranks on the node
])
def test_connector_cpu_tier_is_sized_to_the_node(cat, kv: str, key: str, expected_gib: int) -> None:
    sel = Selection(model="deepseek-ai/DeepSeek-V3", hardware="h200", kv_offload=kv, allow_unverified=True)
    planned = plan_selection(cat, sel, SMALL_NODE, strict=False)
    serve = _serve(planned.plan)
    assert devices_on_node(serve.argv) == 8
    assert _extra(serve.argv)[key] == expected_gib * GIB
    assert not [w for w in planned.warnings if "KV offload CPU tier" in w]
    assert not [w for w in host_fit_warnings(cat, planned.plan, SMALL_NODE) if "CPU tier" in w]
    builder = synthesize(cat, sel)
    assert _extra(_serve(builder).argv)[key] > expected_gib * GIB  # synthesis alone keeps the builder's


def test_a_persons_own_transfer_config_is_not_rewritten(cat) -> None:
    own = json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                      "kv_connector_extra_config": {"cpu_bytes_to_use": 100 * GIB}}, separators=(",", ":"))
    sel = Selection(model="Qwen/Qwen3-8B", hardware="h200", kv_offload="offloading_cpu", allow_unverified=True,
                    advanced_args=[f"--kv-transfer-config={own}"])
    planned = plan_selection(cat, sel, SMALL_NODE, strict=False)
    assert _extra(_serve(planned.plan).argv)["cpu_bytes_to_use"] == 100 * GIB
    assert any("KV offload CPU tier OffloadingConnector" in w for w in planned.warnings)


@pytest.mark.parametrize("kv, env, expected", [
    ("kv_store_distributed_mooncake", "MOONCAKE_CONFIG_PATH", f"{17 // 8}GB"),  # per worker: TP 8 on the node
    ("kv_store_centralized_mooncake", "MOONCAKE_STORE_CONFIG_PATH", "17GB"),  # the store's pool
])
def test_mooncake_segments_are_sized_to_the_node(cat, kv: str, env: str, expected: str) -> None:
    sel = Selection(model="deepseek-ai/DeepSeek-V3", hardware="h200", kv_offload=kv, allow_unverified=True)
    planned = plan_selection(cat, sel, SMALL_NODE, strict=False)
    assert planned.plan.config_files[env]["global_segment_size"] == expected
    assert any(f"Mooncake global_segment_size {expected}" in n for n in planned.plan.notes)
    template = synthesize(cat, sel).config_files[env]["global_segment_size"]  # the catalog's copy is untouched
    assert mooncake_size_bytes(template) > 17 * GIB


def test_mooncake_sizes_read_as_vllm_reads_them() -> None:
    assert mooncake_size_bytes("500GB") == 500 * GIB
    assert mooncake_size_bytes(" 4 mb") == 4 * 2**20
    assert mooncake_size_bytes(1024) == 1024
    assert mooncake_size_bytes("$SIZE") is None and mooncake_size_bytes(True) is None
