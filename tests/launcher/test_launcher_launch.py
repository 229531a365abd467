"""The one launch path: placeholder defaults decided once, node checks from facts passed in."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest
import yaml

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.launcher.launch import NodeFacts, launch, node_facts, node_problems, placeholder_values, prepare
from vllm_deploy_wizard.launcher.spec import ProcessSpec, RunSpec

GIB = 2**30
HOST = NodeFacts(primary_ip="10.1.2.3", default_iface="ens5")


def test_placeholder_defaults_head_and_iface_from_facts_then_plan_then_pool_names():
    names = ["HEAD_IP", "IFACE_NAME", "ROUTER_HOST", "PREFILL_NODE_1", "ROUTER_PORT", "DECODE_NODE_2"]
    plan = {"ROUTER_HOST": "127.0.0.1", "ROUTER_PORT": 30000, "HEAD_IP": "192.0.2.9"}
    assert placeholder_values(names, HOST, 0, plan) == {
        "HEAD_IP": "10.1.2.3", "IFACE_NAME": "ens5", "ROUTER_HOST": "127.0.0.1", "PREFILL_NODE_1": "10.1.2.3",
        "ROUTER_PORT": "30000", "DECODE_NODE_2": ""}
    # another node: the head's address is not this host's; the interface is
    assert placeholder_values(["HEAD_IP", "IFACE_NAME"], HOST, 1) == {"HEAD_IP": "", "IFACE_NAME": "ens5"}
    # facts without an address: unknown stays unknown
    assert placeholder_values(["HEAD_IP"], NodeFacts(), 0) == {"HEAD_IP": ""}


def test_only_the_launched_machines_own_pool_address_is_this_hosts():
    pools = ["PREFILL_NODE_1", "DECODE_NODE_1", "ROUTER_HOST"]
    plan = {"ROUTER_HOST": "localhost"}
    assert placeholder_values(pools, HOST, 0, plan, node="prefill-node-0") == {
        "PREFILL_NODE_1": "10.1.2.3", "DECODE_NODE_1": "", "ROUTER_HOST": "localhost"}
    assert placeholder_values(pools, HOST, 0, plan, node="decode-node-0") == {
        "PREFILL_NODE_1": "", "DECODE_NODE_1": "10.1.2.3", "ROUTER_HOST": "localhost"}
    assert placeholder_values(pools[:2], HOST, 0, plan, node="router") == {"PREFILL_NODE_1": "", "DECODE_NODE_1": ""}
    assert placeholder_values(["PREFILL_NODE_2", "PREFILL_NODE_1"], HOST, 1, node="prefill-node-1") == {
        "PREFILL_NODE_2": "10.1.2.3", "PREFILL_NODE_1": ""}
    assert placeholder_values(["VLLM_INSTANCE_1", "VLLM_INSTANCE_2"], HOST, 0, node="instance-1-node-0") == {
        "VLLM_INSTANCE_1": "", "VLLM_INSTANCE_2": "10.1.2.3"}
    # a co-located PD plan: both pools on this machine, as the plan says
    local = {"PREFILL_NODE_1": "127.0.0.1", "DECODE_NODE_1": "127.0.0.1"}
    assert placeholder_values(pools[:2], HOST, 0, local, node="node-0") == local


def test_launching_one_pd_machine_leaves_the_other_pools_address_to_set(tmp_path):
    import io
    import json

    from vllm_deploy_wizard.catalog import load_catalog, synthesize
    from vllm_deploy_wizard.catalog.render import plan_file
    from vllm_deploy_wizard.catalog.selection import selection_from_data
    from vllm_deploy_wizard.launcher.plan_file import parse_plan
    from vllm_deploy_wizard.workflows.launching import resolve_values

    plan = synthesize(load_catalog(), selection_from_data({"model": "deepseek-ai/DeepSeek-V3", "hardware": "h200",
                                                           "strategy": "pd_cluster", "nodes": 2}))
    data = json.loads(json.dumps(plan_file(plan, {"catalog_source": "test"}, "0.1.0")))
    err = io.StringIO()
    values = resolve_values(data, [], 0, err, host_facts=lambda: NS(primary_ip="192.0.2.2", default_iface="eth0"),
                            node="decode-node-0")
    assert values.get("DECODE_NODE_1") == "192.0.2.2" and "PREFILL_NODE_1" not in values
    assert "DECODE_NODE_1=192.0.2.2" in err.getvalue() and "PREFILL_NODE_1=" not in err.getvalue()
    assert [p.name for p in parse_plan(data, values=values, node="decode-node-0").processes] == ["decode-0"]
    # the router's machine is neither pool's: both are for --set, and the launch says so
    values = resolve_values(data, [], 0, io.StringIO(), host_facts=lambda: NS(primary_ip="192.0.2.2"), node="router")
    assert not {"PREFILL_NODE_1", "DECODE_NODE_1"} & set(values)
    with pytest.raises(LaunchError, match=r"PREFILL_NODE_1") as refused:
        parse_plan(data, values=values, node="router")
    assert "DECODE_NODE_1" in str(refused.value) and "--set" in str(refused.value)


def _serve(*args, env=None):
    return ProcessSpec(name="vllm", argv=("vllm", "serve", "Qwen/Qwen3-0.6B", *args), env=env or {})


def test_a_gpu_plan_on_a_cpu_node_is_refused_unless_forced():
    spec = RunSpec((_serve("--tensor-parallel-size", "8"),))
    [problem] = node_problems(spec, NodeFacts(), plan_accelerator="h200")
    assert "a h200 plan on a node without accelerators" in problem and "--force" in problem
    assert node_problems(spec, NodeFacts(), plan_accelerator="h200", force=True) == []
    # parallel sizes alone say accelerators too
    assert node_problems(spec, NodeFacts())
    # more devices than the node has
    two = NodeFacts(accelerator="cuda", device_total_bytes=(80 * GIB, 80 * GIB))
    [problem] = node_problems(spec, two)
    assert "needs 8 devices" in problem and "has 2" in problem


def test_cpu_memory_fit_is_what_the_cpu_worker_checks():
    """vLLM 0.32's CPU worker (vllm/v1/worker/cpu_worker.py) checks the utilization share of the NUMA
    node only without an explicit KV size; with one it checks the KV size against the free memory."""
    facts = NodeFacts(numa_mem_total_bytes=int(12.59 * GIB), numa_mem_free_bytes=int(11.0 * GIB))
    spec = RunSpec((_serve("--gpu-memory-utilization", "0.92"),))
    [problem] = node_problems(spec, facts)
    assert "one NUMA node" in problem and "11.0 GiB is free" in problem and "--gpu-memory-utilization 0.85" in problem
    assert node_problems(RunSpec((_serve("--gpu-memory-utilization", "0.85"),)), facts) == []
    # an explicit KV size: vLLM makes no utilization check
    explicit = RunSpec((_serve("--gpu-memory-utilization", "0.92", env={"VLLM_CPU_KVCACHE_SPACE": "4"}),))
    assert node_problems(explicit, facts) == []
    flag = RunSpec((_serve("--gpu-memory-utilization", "0.99", "--kv-cache-memory-bytes", "4G"),))
    assert node_problems(flag, facts) == []
    big = RunSpec((_serve("--gpu-memory-utilization", "0.5", env={"VLLM_CPU_KVCACHE_SPACE": "12"}),))
    [problem] = node_problems(big, facts)
    assert "VLLM_CPU_KVCACHE_SPACE=12 asks vLLM for a 12.0 GiB KV cache" in problem
    assert "VLLM_CPU_KVCACHE_SPACE=10" in problem
    # vLLM reads the variable with int(): a fraction would crash it at start
    [problem] = node_problems(RunSpec((_serve(env={"VLLM_CPU_KVCACHE_SPACE": "2.5"}),)), facts)
    assert "not a whole number of GiB" in problem


def test_the_cpu_memory_rule_is_only_for_cpu_backend_plans():
    """A CUDA plan on a CPU-only node is refused for the mismatch alone: vLLM's CPU worker memory check
    is not what it would meet; a CPU plan on the same node still gets it."""
    facts = NodeFacts(numa_mem_total_bytes=int(12.59 * GIB), numa_mem_free_bytes=int(11.0 * GIB))
    spec = RunSpec((_serve("--gpu-memory-utilization", "0.92"),))
    [problem] = node_problems(spec, facts, plan_accelerator="cuda")
    assert "a cuda plan on a node without accelerators" in problem
    assert node_problems(spec, facts, plan_accelerator="cuda", force=True) == []
    [problem] = node_problems(spec, facts, plan_accelerator="cpu")
    assert "one NUMA node" in problem


def test_gpu_memory_fit_uses_the_free_device_memory():
    facts = NodeFacts(accelerator="cuda", device_total_bytes=(80 * GIB,), device_free_bytes=(40 * GIB,))
    [problem] = node_problems(RunSpec((_serve(),)), facts)
    assert "device 0 has 40.0 of 80.0 GiB free" in problem and "--gpu-memory-utilization 0.48" in problem


def test_offline_model_must_be_in_the_local_cache(tmp_path):
    cache = tmp_path / "hub"
    spec = RunSpec((_serve(env={"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache)}),))
    [problem] = node_problems(spec, NodeFacts(numa_mem_total_bytes=None))
    assert "HF_HUB_OFFLINE=1 but Qwen/Qwen3-0.6B is not in the local Hugging Face cache" in problem
    assert "hf download Qwen/Qwen3-0.6B" in problem
    snap = cache / "models--Qwen--Qwen3-0.6B" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (cache / "models--Qwen--Qwen3-0.6B" / "refs").mkdir()
    (cache / "models--Qwen--Qwen3-0.6B" / "refs" / "main").write_text("abc")
    assert node_problems(spec, NodeFacts()) == []


def test_launch_lists_every_problem_at_once_and_starts_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    plan = tmp_path / "p.yaml"
    plan.write_text(yaml.safe_dump({"plan_version": 1, "plan": {"accelerator": "cuda", "processes": [
        {"name": "vllm", "role": "serve", "argv": [str(tmp_path / "no-venv" / "vllm"), "serve", "m", "--max-model-len",
                                                    "--host", "$HEAD_IP"]}]}}))
    prepared = prepare(plan, values={}, facts=HOST, check_flags=False)
    assert prepared.values == {"HEAD_IP": "10.1.2.3"} and prepared.detected == {"HEAD_IP": "10.1.2.3"}
    with pytest.raises(LaunchError) as err:
        launch(plan, facts=HOST, check_flags=False)
    text = str(err.value)
    assert "--max-model-len has no value" in text and "not found" in text and "cuda plan" in text
    runs = tmp_path / "state" / "vllm-wizard" / "runs"
    assert not runs.exists() or not list(runs.iterdir())


def test_a_planned_single_gpu_plan_is_refused_on_a_node_without_accelerators(tmp_path):
    """A real plan file for one H200 (TP 1, nothing in its argv says GPU) names its backend, and
    launch preflight refuses it on a CPU-only node unless forced."""
    import yaml

    from vllm_deploy_wizard.catalog import load_catalog
    from vllm_deploy_wizard.catalog.planner import plan_selection
    from vllm_deploy_wizard.catalog.render import plan_file
    from vllm_deploy_wizard.catalog.selection import Selection

    cat = load_catalog()
    planned = plan_selection(cat, Selection(model="Qwen/Qwen3-32B", hardware="h200", gpus=1))
    data = plan_file(planned.plan, {"catalog_source": "bundled"}, "test")
    assert data["plan"]["accelerator"] == "cuda"
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    cpu_node = NodeFacts()
    refused = prepare(str(path), facts=cpu_node, check_flags=False)
    assert any("a cuda plan on a node without accelerators" in p for p in refused.problems), refused.problems
    forced = prepare(str(path), facts=cpu_node, check_flags=False, force=True)
    assert not any("without accelerators" in p for p in forced.problems)


def test_a_cpu_plan_across_two_nodes_is_no_accelerator_plan():
    """TP 2 over ``--nnodes 2`` on the CPU backend: one rank per node, and the plan says ``cpu``."""
    spec = RunSpec((_serve("--tensor-parallel-size", "2", "--nnodes", "2", "--node-rank", "0"),))
    assert node_problems(spec, NodeFacts(), plan_accelerator="cpu") == []
    # without the plan's word, TP 2 over two nodes is still one device per node
    assert node_problems(spec, NodeFacts()) == []


def _host(**over):
    nodes = [NS(id=0, cpus=0, mem_bytes=96 * GIB, available_bytes=90 * GIB),  # GPU HBM: no CPUs
             NS(id=1, cpus=32, mem_bytes=64 * GIB, available_bytes=50 * GIB)]
    return NS(**{"primary_ip": "10.1.2.3", "default_iface": "ens5", "numa_nodes": nodes,
                 "cgroup_limit_bytes": None, "cgroup_usage_bytes": None, **over})


def test_node_facts_from_detection_take_the_first_numa_node_with_cpus_and_the_devices():
    gpu = NS(kind="cuda", brand="NVIDIA", devices=[NS(memory_bytes=80 * GIB), NS(memory_bytes=None)])
    facts = node_facts(_host(), NS(accelerators=[gpu], primary=gpu))
    assert facts == NodeFacts(primary_ip="10.1.2.3", default_iface="ens5", accelerator="cuda",
                              device_total_bytes=(80 * GIB, 0), numa_mem_total_bytes=64 * GIB,
                              numa_mem_free_bytes=50 * GIB)
    assert facts.accelerators == 2
    cpu_only = node_facts(_host(), NS(accelerators=[], primary=None))
    assert (cpu_only.accelerator, cpu_only.device_total_bytes, cpu_only.accelerators) == (None, (), 0)


def test_node_facts_clamp_numa_memory_to_a_smaller_cgroup_limit():
    facts = node_facts(_host(cgroup_limit_bytes=16 * GIB, cgroup_usage_bytes=10 * GIB))
    assert (facts.numa_mem_total_bytes, facts.numa_mem_free_bytes) == (16 * GIB, 6 * GIB)
    wide = node_facts(_host(cgroup_limit_bytes=128 * GIB, cgroup_usage_bytes=10 * GIB))
    assert (wide.numa_mem_total_bytes, wide.numa_mem_free_bytes) == (64 * GIB, 50 * GIB)


def test_node_facts_without_memory_facts_leave_the_memory_check_out():
    unknown = node_facts(_host(numa_nodes=[NS(id=0, cpus=4, mem_bytes=8 * GIB, available_bytes=None)]))
    assert (unknown.numa_mem_total_bytes, unknown.numa_mem_free_bytes) == (None, None)
    assert node_facts(None) == NodeFacts()
    assert node_facts(_host(primary_ip="", default_iface="")).primary_ip is None


def test_a_workers_address_and_interface_are_those_of_the_route_to_its_head() -> None:
    """A node with two networks: detection's default-route facts name the other one; with the head's
    address known, NODE_IP/IFACE_NAME are the source address and interface of the route to it."""
    from vllm_deploy_wizard.launcher.launch import NodeFacts, _primary_address, placeholder_values, route_to

    here = _primary_address()
    if here.startswith("127."):
        pytest.skip("this host has no route off loopback")
    route = route_to(here)
    assert route is not None and route[0] == here and route[1]
    other = NodeFacts(primary_ip="192.0.2.77", default_iface="eth-other")
    names = ["NODE_IP", "IFACE_NAME"]
    assert placeholder_values(names, other, node_rank=1) == {"NODE_IP": "192.0.2.77", "IFACE_NAME": "eth-other"}
    assert placeholder_values(names, other, node_rank=1, head=here) == {"NODE_IP": here, "IFACE_NAME": route[1]}
    assert route_to("not-an-address") is None
