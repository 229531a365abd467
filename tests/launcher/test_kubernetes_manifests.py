"""``plan … --k8s DIR``: manifests for every strategy shape of the golden cases, each validated —
LeaderWorkerSet against the CRD schema of ../shared/schemas/lws (jsonschema, unknown fields refused)
and the core kinds with kubernetes-validate (strict) — plus what each shape must contain
(docs/multi-node.md §3)."""

from __future__ import annotations

import collections
import functools
import json
import re
from pathlib import Path

import pytest
import yaml

from vllm_deploy_wizard.cli import main
from vllm_deploy_wizard.common.flags import last_flag_value
from vllm_deploy_wizard.launcher.engines.kubernetes import DEVICE_RESOURCES, SECRET_NAME, device_resource

jsonschema = pytest.importorskip("jsonschema")
kubernetes_validate = pytest.importorskip("kubernetes_validate")

SHARED = Path(__file__).resolve().parents[3] / "shared"
RECIPES = SHARED / "recipes-snapshot"
#: Every test here plans from ../shared's recipes snapshot and validates against its CRD schemas: the
#: ``shared`` fixture skips them (counted in the summary) where it is missing.
pytestmark = pytest.mark.usefixtures("shared")


def _strict(schema):
    """The CRD schema with unknown fields refused (as the API server prunes/refuses them)."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out \
                and not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(x) for x in schema]
    return schema


@functools.cache
def crd_validator(kind: str):
    files = {"LeaderWorkerSet": "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
             "DisaggregatedSet": "disaggregatedset.x-k8s.io_disaggregatedsets.yaml"}
    crd = yaml.safe_load((SHARED / "schemas" / "lws" / files[kind]).read_text())
    version = next(v for v in crd["spec"]["versions"] if v.get("served", True))
    return jsonschema.Draft7Validator(_strict(version["schema"]["openAPIV3Schema"])), \
        f"{crd['spec']['group']}/{version['name']}"


def validate(doc: dict) -> None:
    """Raise AssertionError listing every schema violation of one manifest."""
    if doc["kind"] in ("LeaderWorkerSet", "DisaggregatedSet"):
        validator, api = crd_validator(doc["kind"])
        assert doc["apiVersion"] == api
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
        assert not errors, f"{doc['kind']} {doc['metadata']['name']}: " + "; ".join(errors[:5])
    else:
        try:
            kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)
        except kubernetes_validate.ValidationError as exc:
            raise AssertionError(f"{doc['kind']} {doc['metadata']['name']}: {exc.message} at "
                                 f"{'/'.join(map(str, exc.path))}") from None


def _shapes() -> list[dict]:
    """One golden case per strategy shape (deploy type, strategy, PD pools single/multi-node,
    KV offload, router, connector, install mode)."""
    shapes: dict[tuple, dict] = collections.OrderedDict()
    path = SHARED / "golden" / "cases.jsonl"
    if not path.exists():
        return []
    for line in path.read_text().splitlines():
        c = json.loads(line)
        s = c["selection"]
        if "hardware" not in s:
            continue
        pd = s.get("pd") or {}
        key = (c["expected"].get("deploy_type"), s.get("strategy"),
               tuple(sorted((k, v.get("nodes", 0) > 1) for k, v in pd.items())),
               s.get("kv_offload"), s.get("router"), s.get("connector"), s.get("install_mode"))
        shapes.setdefault(key, c)
    return list(shapes.values())


SHAPES = _shapes() or [{"id": "golden-cases-missing", "selection": None}]  # skipped by ``shared``


def export(tmp_path: Path, *args: str, selection: dict | None = None) -> dict[str, list[dict]]:
    out = tmp_path / "k8s"
    argv = ["plan", "--recipes", str(RECIPES), *args, "--k8s", str(out), "--k8s-set", "MOONCAKE_DEVICE_NAME=mlx5_0",
            "--k8s-set", "MOONCAKE_STORE_DEVICE_NAME=mlx5_1"]
    if selection is not None:
        sel = tmp_path / "selection.json"
        sel.write_text(json.dumps(selection))
        argv += ["--selection", str(sel)]
    assert main(argv) == 0
    for p in out.iterdir():  # every value written in full: kubectl users read and edit these files
        assert p.stat().st_mode & 0o777 == 0o644  # no secret value in them: each is read from the Secret
        assert not re.search(r"[&*]id\d+", p.read_text()), f"{p.name}: YAML anchor/alias"
    return {p.name: list(yaml.safe_load_all(p.read_text())) for p in sorted(out.iterdir())}


def _containers(doc: dict) -> list[dict]:
    if doc["kind"] == "Deployment":
        specs = [doc["spec"]["template"]["spec"]]
    elif doc["kind"] == "LeaderWorkerSet":
        t = doc["spec"]["leaderWorkerTemplate"]
        specs = [t["leaderTemplate"]["spec"], t["workerTemplate"]["spec"]]
    else:
        return []
    return [c for s in specs for c in [*s.get("initContainers", []), *s["containers"]]]


@pytest.mark.parametrize("case", SHAPES, ids=[c["id"] for c in SHAPES])
def test_every_strategy_shape_gives_valid_manifests(case, tmp_path) -> None:
    files = export(tmp_path, selection=case["selection"])
    docs = [d for ds in files.values() for d in ds]
    for doc in docs:
        validate(doc)
    text = "\n".join(yaml.safe_dump_all(ds) for ds in files.values())
    assert not re.findall(r"\$\{?[A-Z][A-Z0-9_]*", text.replace("$(", "")), "placeholder left in the manifests"
    procs = case["expected"]["processes"]
    multi = [p for p in procs if "--headless" in p["argv"] or "--data-parallel-start-rank" in p["argv"]]
    lws = [d for d in docs if d["kind"] == "LeaderWorkerSet"]
    if multi:  # every multi-node group is one LeaderWorkerSet that recreates the group on a pod restart
        assert lws
        for d in lws:
            t = d["spec"]["leaderWorkerTemplate"]
            assert t["restartPolicy"] == "RecreateGroupOnPodRestart" and t["size"] >= 2
            worker_args = t["workerTemplate"]["spec"]["containers"][0]["args"]
            assert "$(LWS_LEADER_ADDRESS)" in " ".join(worker_args)
            if "--node-rank" in worker_args:
                assert worker_args[worker_args.index("--node-rank") + 1] == "$(LWS_WORKER_INDEX)"
    else:
        assert not lws and any(d["kind"] == "Deployment" for d in docs)
    # every listening port has a Service; readiness on each server; secrets by reference only
    services = {p["port"] for d in docs if d["kind"] == "Service" for p in d["spec"]["ports"]}
    for d in docs:
        for c in _containers(d):
            for port in c.get("ports", []):
                assert port["containerPort"] in services
            for e in c.get("env", []):
                if re.search(r"TOKEN|KEY|SECRET|PASSWORD", e["name"]):
                    assert "value" not in e and e["valueFrom"]["secretKeyRef"]["name"] == SECRET_NAME
    # start order: infra/companions before engines before routers (file order for kubectl apply)
    phase_of = {"00": -1, "10": 0, "20": 1, "30": 2, "40": 3}
    assert list(files) == sorted(files, key=lambda f: phase_of[f[:2]])


def test_multi_node_tp_is_one_leaderworkerset_from_node_0s_command(tmp_path) -> None:
    files = export(tmp_path, "--model", "ByteDance-Seed/Seed-OSS-36B-Instruct", "--hardware", "b200",
                   "--strategy", "multi_node_tp", "--nodes", "3")
    (name, docs), = files.items()
    lws, svc = docs
    t = lws["spec"]["leaderWorkerTemplate"]
    assert t["size"] == 3 and lws["spec"]["startupPolicy"] == "LeaderCreated"
    leader = t["leaderTemplate"]["spec"]["containers"][0]
    assert leader["command"] + leader["args"][:2] == ["vllm", "serve", "ByteDance-Seed/Seed-OSS-36B-Instruct"]
    assert leader["args"][leader["args"].index("--node-rank") + 1] == "0"
    assert leader["readinessProbe"]["httpGet"] == {"path": "/health", "port": 8000}
    assert leader["resources"]["limits"] == {"nvidia.com/gpu": 8}
    env = {e["name"]: e for e in leader["env"]}
    assert env["VLLM_HOST_IP"]["value"] == "$(POD_IP)" and env["GLOO_SOCKET_IFNAME"]["value"] == "eth0"
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": SECRET_NAME, "key": "HF_TOKEN", "optional": True}
    vol = t["leaderTemplate"]["spec"]["volumes"][0]
    assert vol == {"name": "dshm", "emptyDir": {"medium": "Memory"}}
    assert svc["spec"]["selector"]["vllm-wizard/group-role"] == "leader"


def test_api_keys_never_inline(tmp_path) -> None:
    files = export(tmp_path, "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--arg=--api-key sk-topsecret-123")
    text = "\n".join(yaml.safe_dump_all(d) for d in files.values())
    assert "sk-topsecret-123" not in text
    (docs,) = files.values()
    c = docs[0]["spec"]["template"]["spec"]["containers"][0]
    assert c["args"][c["args"].index("--api-key") + 1] == "$(API_KEY)"
    assert {"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": SECRET_NAME, "key": "API_KEY"}}} in c["env"]


def test_pd_pools_are_leaderworkersets_and_the_router_a_deployment(tmp_path) -> None:
    files = export(tmp_path, "--model", "Qwen/Qwen3-Coder-480B-A35B-Instruct", "--hardware", "h200",
                   "--strategy", "pd_cluster", "--pd-prefill", "2", "--pd-decode", "2")
    docs = [d for ds in files.values() for d in ds]
    kinds = collections.Counter((d["kind"], d["metadata"]["name"]) for d in docs)
    assert kinds[("LeaderWorkerSet", "vllm-prefill")] == 1 and kinds[("LeaderWorkerSet", "vllm-decode")] == 1
    router = next(d for d in docs if d["kind"] == "Deployment" and "router" in d["metadata"]["name"])
    c = router["spec"]["template"]["spec"]
    args = " ".join(c["containers"][0]["args"])
    assert "http://vllm-prefill:8001" in args and "http://vllm-decode:8002" in args
    waits = {i["args"][0] for i in c["initContainers"]}
    assert waits == {"vllm-prefill", "vllm-decode"}  # started after the pools answer


def test_companions_are_own_workloads_started_first(tmp_path) -> None:
    files = export(tmp_path, "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--kv-offload",
                   "kv_store_centralized_mooncake", "--kv-instances", "2")
    names = list(files)
    assert names[0] == "00-vllm-config.yaml"  # Mooncake's config files, mounted where the plan points
    assert names[1].startswith("10-") and "mooncake-master" in names[1]
    engine = next(ds[0] for f, ds in files.items() if f.startswith("30-"))
    waits = [i["args"][0] for i in engine["spec"]["template"]["spec"]["initContainers"]]
    assert any("mooncake-master" in w for w in waits)
    master = files[names[1]][0]["spec"]["template"]["spec"]["containers"][0]
    assert "readinessProbe" in master


@pytest.mark.parametrize("hardware, resource", [
    ("h200", "nvidia.com/gpu"), ("mi300x", "amd.com/gpu"), ("ascend_950pr", "huawei.com/Ascend910"),
    ("trillium", "google.com/tpu"), ("arc_pro_b60", "gpu.intel.com/xe"), ("xeon6", None)])
def test_device_resource_per_vendor(hardware, resource, tmp_path) -> None:
    from vllm_deploy_wizard.catalog import load_catalog

    profile = load_catalog(RECIPES).taxonomy.hardware_profiles[hardware]
    assert device_resource(profile.brand, profile.compute_arch or profile.generation) == resource
    if resource is not None:
        assert resource in DEVICE_RESOURCES.values()


def test_data_parallel_workers_start_at_their_own_rank(tmp_path) -> None:
    files = export(tmp_path, "--model", "Google/gemma-4-26B-A4B-it", "--hardware", "gb300",
                   "--strategy", "multi_node_dep", "--nodes", "3")
    lws = next(d for ds in files.values() for d in ds if d["kind"] == "LeaderWorkerSet")
    validate(lws)
    t = lws["spec"]["leaderWorkerTemplate"]
    c = t["workerTemplate"]["spec"]["containers"][0]
    assert t["size"] == 3 and c["command"] == ["/bin/sh"]
    # worker k of 3 starts at DP rank 4·k (4 local ranks each); $$ is Kubernetes' escape for a literal $
    assert c["args"][:2] == ["-c", 'exec "$0" "$@" --data-parallel-start-rank $$((LWS_WORKER_INDEX * 4))']
    assert c["args"][2:4] == ["vllm", "serve"] and "--data-parallel-start-rank" not in c["args"][2:]


def _engines(files: dict[str, list[dict]]) -> list[dict]:
    """The engine containers (those requesting a device) of every workload."""
    return [c for ds in files.values() for d in ds for c in _containers(d)
            if set(c.get("resources", {}).get("limits", {})) & set(DEVICE_RESOURCES.values())]


def test_single_node_tp1_requests_one_gpu_not_the_profiles_eight(tmp_path) -> None:
    files = export(tmp_path, "--model", "Qwen/Qwen3-32B", "--hardware", "h200")
    (c,) = _engines(files)
    assert last_flag_value(c["args"], "--tensor-parallel-size") == "1"
    assert c["resources"] == {"limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 1}}


def test_single_node_tp8_requests_eight_gpus(tmp_path) -> None:
    files = export(tmp_path, "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--arg=--tensor-parallel-size 8")
    (c,) = _engines(files)
    assert last_flag_value(c["args"], "--tensor-parallel-size") == "8"
    assert c["resources"]["limits"] == {"nvidia.com/gpu": 8}


def test_single_node_data_parallel_requests_tp_times_dp(tmp_path) -> None:
    files = export(tmp_path, "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--arg=--tensor-parallel-size 2",
                   "--arg=--data-parallel-size 2")
    (c,) = _engines(files)
    assert c["resources"]["limits"] == {"nvidia.com/gpu": 4}


def test_co_located_pd_pools_request_their_pinned_devices_numbered_in_the_pod(tmp_path) -> None:
    files = export(tmp_path, "--model", "Qwen/Qwen3-Coder-480B-A35B-Instruct", "--hardware", "h200",
                   "--strategy", "pd_cluster", "--pd-prefill", "0", "--pd-decode", "0")
    engines = _engines(files)
    assert len(engines) == 2
    for c in engines:
        assert c["resources"]["limits"] == {"nvidia.com/gpu": 4}
        assert last_flag_value(c["args"], "--tensor-parallel-size") == "4"
        # the device plugin hands the pod its 4 devices as 0-3: the host's 4,5,6,7 pin would name none of them
        assert not [e for e in c["env"] if e["name"].endswith("_VISIBLE_DEVICES")]


def test_multi_node_pods_request_their_nodes_share(tmp_path) -> None:
    files = export(tmp_path, "--model", "Qwen/Qwen3-Coder-480B-A35B-Instruct", "--hardware", "h200",
                   "--strategy", "pd_cluster", "--pd-prefill", "2", "--pd-decode", "2")
    engines = _engines(files)
    assert len(engines) == 4  # leader + worker template of each pool, TP 16 over 2 nodes
    assert {c["resources"]["limits"]["nvidia.com/gpu"] for c in engines} == {8}




def test_tpu7x_pods_request_chips_on_the_tpu_node_pool(tmp_path) -> None:
    """TPU7x: vLLM counts 8 TensorCores on a 4-chip node; each pod requests google.com/tpu: 4 and
    selects the tpu7x node pool of the plan's slice, 2x2x<nodes> (without the selectors a TPU pod
    never schedules). The 480B model does not fit one node, so the planner plans two: one
    LeaderWorkerSet whose leader and worker both select the 2x2x2 slice."""
    out = tmp_path / "k8s"  # the bundled TPU7x profile: 8 TensorCores, 4 chips, slice 2x2x{n}
    assert main(["plan", "--model", "Qwen/Qwen3-Coder-480B-A35B-Instruct", "--hardware", "ironwood",
                 "--k8s", str(out)]) == 0
    files = {p.name: list(yaml.safe_load_all(p.read_text())) for p in sorted(out.iterdir())}
    lws = next(d for ds in files.values() for d in ds if d["kind"] == "LeaderWorkerSet")
    template = lws["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 2
    for role in ("leaderTemplate", "workerTemplate"):
        spec = template[role]["spec"]
        assert spec["containers"][0]["resources"]["limits"] == {"google.com/tpu": 4}, role
        assert spec["nodeSelector"] == {"cloud.google.com/gke-tpu-accelerator": "tpu7x",
                                        "cloud.google.com/gke-tpu-topology": "2x2x2"}, role


def _docs(files: dict[str, list[dict]]) -> list[dict]:
    return [d for ds in files.values() for d in ds]


def _named(files: dict[str, list[dict]], kind: str, suffix: str) -> dict:
    return next(d for d in _docs(files) if d["kind"] == kind and d["metadata"]["name"].endswith(suffix))


def test_pd_router_binds_every_pod_address_with_its_api_port_in_the_service_and_probes(tmp_path) -> None:
    files = export(tmp_path, "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h200", "--strategy", "pd_cluster",
                   "--nodes", "2")
    c = _named(files, "Deployment", "router")["spec"]["template"]["spec"]["containers"][0]
    argv = c["command"] + c["args"]
    assert argv[:2] == ["/bin/sh", "-c"] and argv[2].startswith("python3 -m pip install --no-cache-dir vllm-router ")
    assert argv[3] == "vllm-router"  # the plan's install first: the vLLM image has no vllm-router
    assert last_flag_value(argv, "--host") == "0.0.0.0" and last_flag_value(argv, "--port") == "30000"
    assert last_flag_value(argv, "--prometheus-host") == "0.0.0.0"  # its metrics bind 127.0.0.1 by default
    assert [p["containerPort"] for p in c["ports"]] == [29000, 30000]
    assert {c[p]["httpGet"]["port"] for p in ("startupProbe", "readinessProbe", "livenessProbe")} == {30000}
    assert [p["port"] for p in _named(files, "Service", "router")["spec"]["ports"]] == [29000, 30000]
    assert c["resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"}}


def test_pd_router_image_given_runs_the_router_as_planned(tmp_path) -> None:
    files = export(tmp_path, "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h200", "--strategy", "pd_cluster",
                   "--nodes", "2", "--k8s-router-image", "example.org/vllm-router:1")
    c = _named(files, "Deployment", "router")["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == "example.org/vllm-router:1" and c["command"] == ["vllm-router"]


def test_pd_engines_side_channel_at_the_pod_ip_with_its_port_in_the_service(tmp_path) -> None:
    files = export(tmp_path, "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h200", "--strategy", "pd_cluster",
                   "--nodes", "2")
    for role, api, side in (("prefill-0", 8001, 5557), ("decode-0", 8002, 5558)):
        c = _named(files, "Deployment", role)["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e for e in c["env"]}
        assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"]["value"] == "$(POD_IP)"
        assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
        assert [p["containerPort"] for p in c["ports"]] == [side, api]
        assert [p["port"] for p in _named(files, "Service", role)["spec"]["ports"]] == [side, api]
        assert c["readinessProbe"]["httpGet"]["port"] == api  # the API, not the side channel


def test_engines_keep_the_hugging_face_cache_across_pod_restarts(tmp_path) -> None:
    files = export(tmp_path, "--model", "Qwen/Qwen3-32B", "--hardware", "h200")
    spec = _named(files, "Deployment", "vllm")["spec"]["template"]["spec"]
    c = spec["containers"][0]
    assert {"name": "HF_HOME", "value": "/root/.cache/huggingface"} in c["env"]
    assert {"name": "hf-cache", "mountPath": "/root/.cache/huggingface"} in c["volumeMounts"]
    assert {"name": "hf-cache", "hostPath": {"path": "/var/lib/vllm-wizard/hf-cache", "type": "DirectoryOrCreate"}} \
        in spec["volumes"]
    files = export(tmp_path / "pvc", "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--k8s-hf-cache-claim", "hf")
    spec = _named(files, "Deployment", "vllm")["spec"]["template"]["spec"]
    assert {"name": "hf-cache", "persistentVolumeClaim": {"claimName": "hf"}} in spec["volumes"]


def test_cpu_engines_request_cpu_and_memory(tmp_path, capsys) -> None:
    files = export(tmp_path, "--model", "Qwen/Qwen3-1.7B", "--hardware", "xeon6")
    c = _named(files, "Deployment", "vllm")["spec"]["template"]["spec"]["containers"][0]
    assert c["resources"] == {"requests": {"cpu": "8", "memory": "32Gi"}}
    files = export(tmp_path / "given", "--model", "Qwen/Qwen3-1.7B", "--hardware", "xeon6", "--k8s-cpu-request", "16",
                   "--k8s-memory-request", "64Gi")
    c = _named(files, "Deployment", "vllm")["spec"]["template"]["spec"]["containers"][0]
    assert c["resources"] == {"requests": {"cpu": "16", "memory": "64Gi"}}
    assert main(["plan", "--recipes", str(RECIPES), "--model", "Qwen/Qwen3-1.7B", "--hardware", "xeon6", "--k8s",
                 str(tmp_path / "bad"), "--k8s-memory-request", "lots"]) == 2
    assert "--k8s-memory-request 'lots': expected a Kubernetes quantity" in capsys.readouterr().err


def test_the_secret_hint_names_every_key_the_manifests_read(tmp_path) -> None:
    export(tmp_path, "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--arg=--api-key sk-topsecret-123")
    (path,) = (tmp_path / "k8s").iterdir()
    assert "kubectl create secret generic vllm-wizard-secrets --from-literal=API_KEY=… --from-literal=HF_TOKEN=…" \
        in path.read_text()


def test_hybrid_load_balanced_data_parallel_service_selects_every_api_server(tmp_path) -> None:
    files = export(tmp_path, "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h200", "--strategy",
                   "multi_node_dep", "--nodes", "3")
    lws = next(d for d in _docs(files) if d["kind"] == "LeaderWorkerSet")
    worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert "--data-parallel-hybrid-lb" in worker["args"] and 8000 in [p["containerPort"] for p in worker["ports"]]
    (svc,) = [d for d in _docs(files) if d["kind"] == "Service"]
    assert svc["spec"]["selector"] == {"app.kubernetes.io/name": lws["metadata"]["name"]}  # leader and workers


def test_dynamo_etcd_runs_its_own_image_behind_a_service(tmp_path) -> None:
    files = {}
    out = tmp_path / "k8s"
    assert main(["plan", "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h200", "--strategy", "pd_cluster",
                 "--nodes", "2", "--router", "dynamo", "--k8s", str(out)]) == 0
    files = {p.name: list(yaml.safe_load_all(p.read_text())) for p in sorted(out.iterdir())}
    for doc in _docs(files):
        validate(doc)
    etcd = _named(files, "Deployment", "etcd")["spec"]["template"]["spec"]["containers"][0]
    assert etcd["image"] == "quay.io/coreos/etcd:v3.5.21" and etcd["command"] == ["etcd"]
    assert [p["port"] for p in _named(files, "Service", "etcd")["spec"]["ports"]] == [2379]
    router = _named(files, "Deployment", "router")["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "ETCD_ENDPOINTS", "value": "http://vllm-etcd:2379"} in router["env"]


def _engine_env(files: dict[str, list[dict]]) -> dict[str, str]:
    c = _named(files, "Deployment", "vllm")["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in c["env"]}


def test_detected_cpu_facts_stay_out_of_the_export(tmp_path, capsys) -> None:
    fixture = SHARED / "fixtures" / "detect" / "cpu_xeon6_amx.yaml"
    args = ("--model", "Qwen/Qwen3-1.7B", "--replay", str(fixture))
    assert main(["plan", "--recipes", str(RECIPES), *args, "--json"]) == 0
    here = json.loads(capsys.readouterr().out)["processes"][-1]["env"]
    assert {"VLLM_CPU_OMP_THREADS_BIND", "VLLM_CPU_KVCACHE_SPACE"} <= set(here)  # planned for this node
    env = _engine_env(export(tmp_path, *args))
    assert not {k for k in env if k.startswith("VLLM_CPU_")}, env
    assert "--k8s: the export is for other machines, so it is planned without this node's detected facts" \
        in capsys.readouterr().err


def _local_model(tmp_path: Path) -> Path:
    model = tmp_path / "models" / "tiny"
    model.mkdir(parents=True)
    model.joinpath("config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 372, "intermediate_size": 256,
        "max_position_embeddings": 512, "torch_dtype": "bfloat16"}))
    return model


def test_a_local_model_path_is_warned_about_or_mounted_from_a_claim(tmp_path, capsys) -> None:
    model = str(_local_model(tmp_path))
    base = ("--model", model, "--hardware", "h200", "--allow-unverified")
    files = export(tmp_path / "bare", *base)
    err = capsys.readouterr().err
    assert f"warning: --k8s: the engines serve the local path {model}, which no pod has" in err
    assert "--k8s-model-claim PVC" in err
    files = export(tmp_path / "claim", *base, "--k8s-model-claim", "models")
    assert "which no pod has" not in capsys.readouterr().err
    spec = _named(files, "Deployment", "vllm")["spec"]["template"]["spec"]
    assert {"name": "model", "mountPath": model, "readOnly": True} in spec["containers"][0]["volumeMounts"]
    assert {"name": "model", "persistentVolumeClaim": {"claimName": "models", "readOnly": True}} in spec["volumes"]
    for docs in files.values():
        for d in docs:
            validate(d)


def test_a_model_claim_for_a_hub_model_is_refused(tmp_path, capsys) -> None:
    assert main(["plan", "--recipes", str(RECIPES), "--model", "Qwen/Qwen3-32B", "--hardware", "h200",
                 "--k8s", str(tmp_path / "k8s"), "--k8s-model-claim", "models"]) == 2
    assert "--k8s-model-claim models: the model 'Qwen/Qwen3-32B' is a Hugging Face id" in capsys.readouterr().err


def test_the_exporter_refuses_a_namespace_that_is_no_dns_label():
    from vllm_deploy_wizard.launcher.engines.kubernetes import ExportError, dns_label_problem, kubernetes_manifests

    assert dns_label_problem("vllm-serving") is None and dns_label_problem("a" * 63) is None
    assert all(dns_label_problem(ns) for ns in ("Bad_NS", "-ns", "ns-", "a.b", "", "a" * 64))
    with pytest.raises(ExportError, match="namespace 'Bad_NS': not a DNS-1123 label"):
        kubernetes_manifests({"plan": {"processes": []}}, image="img", namespace="Bad_NS")
