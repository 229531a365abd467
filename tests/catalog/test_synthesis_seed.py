"""Seed extensions of docs/synthesis.md §4, pinned with hand-written expected commands.

The goldens cover only the snapshot; these cases are the seed semantics this project chose (the
spec marks them as proposals): frontends, single-node DEP's router companion, DPA+TP, PD connectors,
PD routers, IAXL and Simple's ``pd.roles``.
"""

from __future__ import annotations

import json

import pytest

from vllm_deploy_wizard.catalog import Selection, load_catalog, plan_to_json, synthesize
from vllm_deploy_wizard.catalog.models import Recipe
from vllm_deploy_wizard.common.errors import SelectionError

#: A test MoE recipe, written here so these expectations depend only on the seeds and this file.
MOE_ID = "acme/MoE-Test"
MOE_RECIPE = {
    "hf_org": "acme", "hf_repo": "MoE-Test", "hf_id": MOE_ID,
    "meta": {"title": "MoE Test", "tasks": ["text"], "hardware": {"xeon6": "verified"}},
    "model": {"model_id": MOE_ID, "architecture": "moe", "min_vllm_version": "0.20.0",
              "base_args": ["--trust-remote-code"], "base_env": {}},
    "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 60, "description": "bf16"}},
    "compatible_strategies": ["single_node_tp", "single_node_tep", "single_node_dep", "single_node_dpa_tp",
                              "multi_node_tp", "multi_node_dep", "pd_cluster"],
    "features": {"reasoning": {"description": "parser", "args": ["--reasoning-parser", "acme"]}},
    "hardware_overrides": {"blackwell": {"extra_env": {"VLLM_USE_RUST_FRONTEND": "1"}}},
    "kv_offload_support": {"iaxl": "verified"},
}


@pytest.fixture(scope="module")
def seed_catalog():
    """Bundled catalog (seeds 000/001) plus :data:`MOE_RECIPE`."""
    return load_catalog().with_recipe(Recipe.model_validate(MOE_RECIPE))

NIXL_P = '{"kv_connector":"NixlConnector","kv_role":"kv_producer","kv_load_failure_policy":"fail"}'
NIXL_D = '{"kv_connector":"NixlConnector","kv_role":"kv_consumer","kv_load_failure_policy":"fail"}'
DECODE_CG = '{"cudagraph_mode":"FULL_DECODE_ONLY"}'
ALL8 = "0,1,2,3,4,5,6,7"


def plan(cat, **kw):
    return plan_to_json(synthesize(cat, Selection(model=MOE_ID, **kw)))


def proc(p, role, rank=0):
    return next(x for x in p["processes"] if x["role"] == role and x["node_rank"] == rank)


# ---------------------------------------------------------------------------------------- §4.2

def test_rust_frontend_env_is_merged_last(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="h200", strategy="single_node_tp", frontend="rust", features="none")
    serve = proc(p, "serve")
    assert serve["argv"] == ["vllm", "serve", MOE_ID, "--trust-remote-code", "--tensor-parallel-size", "1"]
    assert serve["env"] == {"VLLM_USE_RUST_FRONTEND": "1"}
    assert p["resolved"]["frontend"] == "rust"


def test_python_frontend_removes_a_recipe_rust_switch(seed_catalog) -> None:
    without = plan(seed_catalog, hardware="b200", strategy="single_node_tp", features="none")
    assert proc(without, "serve")["env"] == {"VLLM_USE_RUST_FRONTEND": "1"}  # recipe blackwell override
    p = plan(seed_catalog, hardware="b200", strategy="single_node_tp", features="none", frontend="python")
    assert proc(p, "serve")["env"] == {}


def test_unknown_frontend_is_refused(seed_catalog) -> None:
    with pytest.raises(SelectionError, match="unknown frontend 'rusty'.*did you mean 'rust'"):
        plan(seed_catalog, frontend="rusty")


# ---------------------------------------------------------------------------------------- §4.5

ROUTER_8 = ["vllm-router", "--host", "0.0.0.0", "--port", "8000", "--policy", "consistent_hash",
            "--intra-node-data-parallel-size", "8", "--worker-urls", "http://localhost:8100",
            "--worker-startup-timeout-secs", "1800"]


def test_single_node_dep_serves_on_8100_with_router_after(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="h200", strategy="single_node_dep", features="none")
    names = [(x["name"], x["role"], x["phase"]) for x in p["processes"]]
    assert names == [("vllm", "serve", "engine"), ("router", "router", "after")]
    serve, router = p["processes"]
    assert serve["argv"] == ["vllm", "serve", MOE_ID, "--trust-remote-code", "--enable-expert-parallel",
                             "--port", "8100", "--data-parallel-size", "8"]
    assert serve["health"]["url"] == "http://127.0.0.1:8100/health"
    assert router["argv"] == ROUTER_8
    assert router["depends_on"] == ["vllm"] and router["ports"] == [8000, 29000]  # + Prometheus
    assert p["install"] == ["uv pip install vllm-router"]


def test_router_templates_follow_the_device_count(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="h200", strategy="single_node_dep", features="none", gpus=4)
    serve, router = p["processes"]
    assert serve["argv"][-2:] == ["--data-parallel-size", "4"]
    assert router["argv"][router["argv"].index("--intra-node-data-parallel-size") + 1] == "4"
    assert p["device_count"] == 4


# ---------------------------------------------------------------------------------------- §4.6

def test_dpa_tp_strips_expert_parallel_whatever_added_it(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="h200", strategy="single_node_dpa_tp", features="none",
             advanced_args=["--enable-expert-parallel", "--max-num-seqs", "64"])
    serve, router = p["processes"]
    assert serve["argv"] == ["vllm", "serve", MOE_ID, "--trust-remote-code", "--port", "8100",
                             "--data-parallel-size", "8", "--max-num-seqs", "64"]
    assert router["argv"] == ROUTER_8


def test_dpa_tp_refuses_kv_offload(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="h200", strategy="single_node_dpa_tp", features="none", kv_offload="simple")
    assert p["checks"]["kv_allowed_for_strategy"] is False
    assert "--kv-transfer-config" not in proc(p, "serve")["argv"]
    with pytest.raises(SelectionError, match="does not compose with KV offload"):
        plan(seed_catalog, hardware="h200", strategy="single_node_dpa_tp", kv_offload="kv_store_distributed_mooncake")


# ---------------------------------------------------------------------------------------- §4.7

PD_TP = {"prefill": {"nodes": 1, "mode": "tp"}, "decode": {"nodes": 1, "mode": "tp"}}


def test_nixl_is_the_default_connector(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="h200", strategy="pd_cluster", features="none", pd=PD_TP)
    assert p["resolved"]["connector"] == "nixl" and p["resolved"]["router"] == "vllm"
    prefill, decode, router = proc(p, "prefill"), proc(p, "decode"), proc(p, "router", None)
    assert prefill["argv"] == ["vllm", "serve", MOE_ID, "--trust-remote-code", "--port", "8001",
                               "--kv-transfer-config", NIXL_P, "--tensor-parallel-size", "8"]
    # NVL4-only keys of the seed prefill env are dropped off GB200/GB300 (§2.7 step 12)
    assert prefill["env"] == {"VLLM_NIXL_SIDE_CHANNEL_PORT": "5557",
                              "VLLM_NIXL_SIDE_CHANNEL_HOST": "$PREFILL_NODE_1", "CUDA_VISIBLE_DEVICES": ALL8}
    assert decode["argv"] == ["vllm", "serve", MOE_ID, "--trust-remote-code", "--port", "8002",
                              "--compilation-config", DECODE_CG, "--kv-transfer-config", NIXL_D,
                              "--tensor-parallel-size", "8"]
    assert decode["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "$DECODE_NODE_1"
    assert router["argv"] == ["vllm-router", "--policy", "round_robin", "--vllm-pd-disaggregation",
                              "--prefill", "http://$PREFILL_NODE_1:8001", "--decode", "http://$DECODE_NODE_1:8002",
                              "--host", "$ROUTER_HOST", "--port", "$ROUTER_PORT",
                              "--intra-node-data-parallel-size", "1"]
    assert p["install"] == ["uv pip install vllm-router"]


def test_nixl_keeps_nvl4_env_on_gb200(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="gb200", strategy="pd_cluster", features="none", pd=PD_TP)
    assert proc(p, "prefill")["env"] == {
        "NCCL_CUMEM_ENABLE": "1", "NCCL_MNNVL_ENABLE": "1", "NCCL_NVLS_ENABLE": "1", "UCX_NET_DEVICES": "all",
        "VLLM_NIXL_SIDE_CHANNEL_PORT": "5557", "VLLM_NIXL_SIDE_CHANNEL_HOST": "$PREFILL_NODE_1",
        "CUDA_VISIBLE_DEVICES": "0,1,2,3", "VLLM_USE_RUST_FRONTEND": "1"}


def test_mooncake_connector(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="h200", strategy="pd_cluster", features="none", pd=PD_TP, connector="mooncake")
    prefill, decode, router = proc(p, "prefill"), proc(p, "decode"), proc(p, "router", None)
    assert prefill["argv"][4:8] == ["--port", "8001", "--kv-transfer-config",
                                    '{"kv_connector":"MooncakeConnector","kv_role":"kv_producer",'
                                    '"kv_load_failure_policy":"fail"}']
    assert prefill["env"] == {"VLLM_MOONCAKE_BOOTSTRAP_PORT": "8998", "CUDA_VISIBLE_DEVICES": ALL8}
    assert decode["env"] == {"CUDA_VISIBLE_DEVICES": ALL8}
    assert router["argv"] == ["vllm-router", "--policy", "round_robin", "--vllm-pd-disaggregation",
                              "--prefill", "http://$PREFILL_NODE_1:8001", "8998",
                              "--decode", "http://$DECODE_NODE_1:8002", "--kv-connector", "mooncake",
                              "--host", "$ROUTER_HOST", "--port", "$ROUTER_PORT",
                              "--intra-node-data-parallel-size", "1"]
    assert p["install"] == ["uv pip install mooncake-transfer-engine-cuda13", "uv pip install vllm-router"]


def test_mooncake_connector_docker_flags(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="h200", strategy="pd_cluster", features="none", pd=PD_TP,
             connector="mooncake", install_mode="docker")
    argv = proc(p, "prefill")["argv"]
    assert argv[:10] == ["docker", "run", "--gpus", "all", "--network", "host", "--ulimit", "memlock=-1",
                         "--privileged", "--ipc=host"]
    assert "-p" not in argv  # host network: the server binds the host's 8001 itself
    assert p["install"] == ["uv pip install vllm-router"]  # the transfer engine is a pip step


def test_moriio_connector_on_amd(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="mi300x", strategy="pd_cluster", features="none", pd=PD_TP, connector="moriio")
    cfg = json.loads(proc(p, "decode")["argv"][proc(p, "decode")["argv"].index("--kv-transfer-config") + 1])
    assert cfg == {"kv_connector": "MoRIIOConnector", "kv_role": "kv_consumer", "kv_load_failure_policy": "fail",
                   "kv_connector_extra_config": {"proxy_ip": "$ROUTER_HOST", "proxy_ping_port": "36367",
                                                 "http_port": "8002", "handshake_port": "7301",
                                                 "notify_port": "62005"}}
    assert proc(p, "router", None)["argv"] == [
        "vllm-router", "--policy", "round_robin", "--vllm-pd-disaggregation", "--kv-connector", "moriio",
        "--vllm-discovery-address", "0.0.0.0:36367", "--host", "$ROUTER_HOST", "--port", "$ROUTER_PORT",
        "--intra-node-data-parallel-size", "1"]
    assert p["install"] == ["uv pip install amd_mori", "uv pip install vllm-router"]


@pytest.mark.parametrize("connector, hardware", [("moriio", "h200"), ("mooncake", "mi300x")])
def test_connector_brand_is_enforced(seed_catalog, connector: str, hardware: str) -> None:
    with pytest.raises(SelectionError, match=f"connector '{connector}' needs"):
        plan(seed_catalog, hardware=hardware, strategy="pd_cluster", pd=PD_TP, connector=connector)


# ---------------------------------------------------------------------------------------- §4.8

def test_smg_router(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="h200", strategy="pd_cluster", features="none", pd=PD_TP, router="smg")
    argv = proc(p, "router", None)["argv"]  # PD mode, workers registered with their connector
    assert argv[:2] == ["sh", "-c"] and argv[3:] == [
        "smg", "launch", "--pd-disaggregation", "--policy", "round_robin", "--host", "$ROUTER_HOST",
        "--port", "$ROUTER_PORT"]
    assert '"url":"http://$PREFILL_NODE_1:8001","worker_type":"prefill","kv_connector":"NixlConnector"' in argv[2]
    assert p["install"] == ['uv pip install "smg==1.11.0"']


def test_smg_refuses_dep_pools_and_kv_offload(seed_catalog) -> None:
    dep = {"prefill": {"nodes": 1, "mode": "tp"}, "decode": {"nodes": 1, "mode": "dep"}}
    with pytest.raises(SelectionError, match="TP/TEP pools only"):
        plan(seed_catalog, hardware="h200", strategy="pd_cluster", pd=dep, router="smg")
    with pytest.raises(SelectionError, match="does not support KV offload"):
        plan(seed_catalog, hardware="h200", strategy="pd_cluster", pd=PD_TP, router="smg",
             kv_offload="kv_store_centralized_mooncake")


def test_dynamo_router(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="h200", strategy="pd_cluster", features="none", pd=PD_TP, router="dynamo")
    order = [(x["name"], x["phase"]) for x in p["processes"]]
    assert order == [("etcd", "infra"), ("prefill-0", "engine"), ("decode-0", "engine"), ("router", "after")]
    etcd = p["processes"][0]
    assert etcd["argv"] == ["docker", "run", "--rm", "--name", "dynamo-etcd", "--network", "host",
                            "quay.io/coreos/etcd:v3.5.21", "etcd", "--listen-client-urls", "http://0.0.0.0:2379",
                            "--advertise-client-urls", "http://$DYN_CONTROL_IP:2379"]
    prefill = proc(p, "prefill")
    kv_both = '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_load_failure_policy":"fail"}'
    assert prefill["argv"] == ["python3", "-m", "dynamo.vllm", "--model", MOE_ID, "--trust-remote-code",
                               "--tensor-parallel-size", "8", "--disaggregation-mode", "prefill",
                               "--kv-transfer-config", kv_both]
    assert prefill["env"] == {"VLLM_NIXL_SIDE_CHANNEL_PORT": "5557", "VLLM_NIXL_SIDE_CHANNEL_HOST": "$PREFILL_NODE_1",
                              "CUDA_VISIBLE_DEVICES": ALL8, "ETCD_ENDPOINTS": "http://$DYN_CONTROL_IP:2379",
                              "DYN_NAMESPACE": "vllm-pd", "DYN_REQUEST_PLANE": "tcp"}
    assert prefill["depends_on"] == ["etcd"] and prefill["health"] is None
    assert proc(p, "router", None)["argv"] == ["python3", "-m", "dynamo.frontend", "--http-port", "$ROUTER_PORT",
                                               "--router-mode", "round-robin"]
    assert p["install"] == ['uv pip install --extra-index-url https://pypi.nvidia.com "ai-dynamo[vllm]==1.5.0"']
    assert "DYN_CONTROL_IP" in p["placeholders"]


# ---------------------------------------------------------------------------------------- §4.3

def test_iaxl_on_xeon_sets_setup_env_and_install(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="xeon6", strategy="single_node_tp", features="none", kv_offload="iaxl")
    serve = proc(p, "serve")
    assert serve["argv"] == ["vllm", "serve", MOE_ID, "--trust-remote-code", "--tensor-parallel-size", "1",
                             "--kv-transfer-config",
                             '{"kv_connector":"KVShrinkConnector","kv_connector_module_path":'
                             '"kvshrink.kvshrink_connector","kv_role":"kv_both"}',
                             "--no-enable-prefix-caching"]
    assert serve["env"] == {"TP_SIZE": "1", "DEVICE": "cpu", "IAXL_DDR_POOL_SIZE_GB": "16"}
    assert serve["setup"].startswith("# setvars.sh sizes QAT/IAA/DSA")
    assert "source setvars.sh" in serve["setup"]
    assert len(p["install"]) == 3 and p["install"][1].startswith("git clone https://github.com/intel/intel-accel")


def test_iaxl_tp_size_template_follows_the_resolved_tp(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="h200", strategy="single_node_tp", features="none", kv_offload="iaxl",
             gpus=2)
    serve = proc(p, "serve")
    assert serve["env"] == {"TP_SIZE": "1", "DEVICE": "cuda", "IAXL_DSA_GD_ENABLE": "0"}
    assert len(p["install"]) == 6


@pytest.mark.parametrize("kw, check", [
    ({"hardware": "gb200"}, "kv_hardware_ok"),
    ({"hardware": "h200", "install_mode": "docker"}, "kv_docker_ok"),
    ({"hardware": "mi300x"}, "kv_brand_ok"),
])
def test_iaxl_gates_drop_the_option(seed_catalog, kw, check: str) -> None:
    p = plan(seed_catalog, strategy="single_node_tp", features="none", kv_offload="iaxl", **kw)
    assert p["checks"][check] is False
    serve = proc(p, "serve")
    assert "--no-enable-prefix-caching" not in serve["argv"] and serve["setup"] is None


def test_simple_offload_composes_with_pd_on_prefill_only(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="h200", strategy="pd_cluster", features="none", pd=PD_TP, kv_offload="simple")
    assert p["checks"]["kv_allowed_for_strategy"] is True
    prefill, decode = proc(p, "prefill"), proc(p, "decode")
    cfg = json.loads(prefill["argv"][prefill["argv"].index("--kv-transfer-config") + 1])
    assert cfg["kv_connector"] == "MultiConnector"
    assert [c["kv_connector"] for c in cfg["kv_connector_extra_config"]["connectors"]] == [
        "NixlConnector", "SimpleCPUOffloadConnector"]
    assert decode["argv"].count("--kv-transfer-config") == 1 and NIXL_D in decode["argv"]


def test_simple_offload_is_gated_off_on_tpu(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="trillium", strategy="single_node_tp", features="none", kv_offload="simple")
    assert p["checks"]["kv_hardware_ok"] is False
    assert "--kv-transfer-config" not in proc(p, "serve")["argv"]


# ---------------------------------------------------------------------------------------- §4.1

def test_profile_image_and_install_gate_on_vr200(seed_catalog) -> None:
    """vr200: ``install.pip: false`` forces docker; its own image wins; its docker note is shown."""
    p = plan(seed_catalog, hardware="vr200", strategy="single_node_tp", features="none", install_mode="pip")
    assert p["install_mode"] == "docker"
    assert p["docker"] == {"image": "vllm/vllm-openai:cu134-nightly"}
    serve = proc(p, "serve")
    assert serve["argv"][:4] == ["docker", "run", "--gpus", "all"]
    assert serve["argv"][serve["argv"].index("vllm/vllm-openai:cu134-nightly") + 1] == MOE_ID
    assert any(n.startswith("Rubin support is a preview") for n in p["notes"])


def test_tpu_slice_topology_note_follows_the_node_count(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="ironwood", strategy="multi_node_tp", nodes=2, features="none")
    assert "TPU slice topology 2x2x2 (4 chips per node)" in p["notes"]


# ---------------------------------------------------------------------------------------- device count

def test_gpus_replaces_the_device_count_but_not_the_per_device_vram(seed_catalog) -> None:
    """``gpus`` (detected devices) drives every layout rule; VRAM per device stays the profile's."""
    # L40S profile: 1 × 48 GB. The 60 GB variant doesn't fit one device → auto-fit TP = device count.
    one = plan(seed_catalog, hardware="l40s", strategy="single_node_tp", features="none")
    assert proc(one, "serve")["argv"][-2:] == ["--tensor-parallel-size", "1"]
    assert one["checks"]["fits_single_node"] is False
    two = plan(seed_catalog, hardware="l40s", strategy="single_node_tp", features="none", gpus=2)
    assert proc(two, "serve")["argv"][-2:] == ["--tensor-parallel-size", "2"]
    assert two["checks"]["fits_single_node"] is True  # 2 × 48 GB ≥ 60 GB
    assert two["resolved"]["gpus"] == 2 and two["device_count"] == 2


def test_gpus_scales_multi_node_and_pd_layouts(seed_catalog) -> None:
    multi = plan(seed_catalog, hardware="h100", strategy="multi_node_tp", nodes=2, features="none", gpus=4)
    assert proc(multi, "head")["argv"][4:6] == ["--tensor-parallel-size", "8"]  # 4 devices × 2 nodes
    pd = plan(seed_catalog, hardware="h100", strategy="pd_cluster", features="none", gpus=4, pd=PD_TP)
    assert proc(pd, "prefill")["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
    assert proc(pd, "decode")["argv"][-2:] == ["--tensor-parallel-size", "4"]


def test_without_gpus_the_profile_count_is_used(seed_catalog) -> None:
    p = plan(seed_catalog, hardware="h100", strategy="single_node_dep", features="none")
    assert p["device_count"] == 8 and "gpus" not in p["resolved"]
