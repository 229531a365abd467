"""Every export shape read as an operator would, by one checker (docs/multi-node.md §3–§4, §7):

* Kubernetes: every Service port and every probe targets a port its container binds, on an
  address other pods reach (every address or the pod IP: not loopback, not a Service name); no
  placeholder left and every ``$(VAR)`` a command reads is set in its container; device requests
  fit the node's devices and pods without devices request CPU and memory; no secret inline;
* Slurm: every machine address the plan names is passed to every task, the router takes no node
  of its own, a GPU plan requests each node's GPUs (at least what the node's engines use, at most its
  devices) and the router's step none, a CPU plan none, every other placeholder is filled by
  ``launch`` or listed in "fill before launch";
* per-node scripts: every placeholder a script reads has a default or stops the script unset (and is
  listed in "fill before launch"), pinned devices exist on the node, a router waits for the engines
  it routes to and, in a plan spanning machines, binds an address they reach (not loopback); no
  secret inline.

The shapes: one golden case per strategy shape (as in ``test_kubernetes_manifests``) plus single
node on each backend, multi-node TP/TEP/DEP/TP+PP/TP+DP, PD with each connector and router, the
Mooncake kv_store, and the builder commands the planner corrects (docs/synthesis.md §7), each
planned as ``plan`` exports it (``plan_selection``, not ``synthesize`` alone). A planted mistake
(the router bound to localhost) makes the checker fail.
"""

from __future__ import annotations

import collections
import copy
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from vllm_deploy_wizard.catalog import load_catalog
from vllm_deploy_wizard.catalog.plan import node_label
from vllm_deploy_wizard.catalog.planner import plan_selection
from vllm_deploy_wizard.catalog.render import node_scripts, plan_file, plan_text
from vllm_deploy_wizard.catalog.selection import selection_from_data
from vllm_deploy_wizard.common import placeholders as ph
from vllm_deploy_wizard.common.flags import last_flag_value
from vllm_deploy_wizard.common.parallelism import devices_on_node
from vllm_deploy_wizard.launcher.engines.kubernetes import DEVICE_RESOURCES, SECRET_NAME, kubernetes_manifests
from vllm_deploy_wizard.launcher.engines.slurm import sbatch_script
from vllm_deploy_wizard.launcher.launch import HEAD_ADDRESS, NODE_ADDRESS, SELF_IFACE

SHARED = Path(__file__).resolve().parents[3] / "shared"
RECIPES = SHARED / "recipes-snapshot"
pytestmark = pytest.mark.usefixtures("shared")

#: What the cluster itself sets in a pod of a LeaderWorkerSet.
LWS_VARS = {"LWS_LEADER_ADDRESS", "LWS_WORKER_INDEX", "LWS_GROUP_SIZE"}
#: Addresses only the machine itself reaches a listener on.
LOOPBACK = {"localhost", "127.0.0.1", "::1"}
#: Addresses every other pod reaches a listener on.
POD_REACHABLE = {"0.0.0.0", "::", "$(POD_IP)"}
#: Per executable: (port flag, default port, host flag, default host) of each listener — vLLM 0.32.0
#: ``vllm serve`` binds every address unless ``--host`` (``vllm/entrypoints/launchers/cli_args.py``
#: ``host = None``, bound by ``launcher.py`` ``create_server_socket``); ``vllm-router`` 0.1.17 ``--help``:
#: ``--host`` and ``--prometheus-host`` 127.0.0.1; the Dynamo frontend ``--http-host`` 0.0.0.0.
LISTENERS = {
    "vllm": [("--port", 8000, "--host", "0.0.0.0")],
    "vllm-router": [("--port", 30000, "--host", "127.0.0.1"),
                    ("--prometheus-port", 29000, "--prometheus-host", "127.0.0.1")],
    "smg": [("--port", 30000, "--host", "127.0.0.1")],
    "dynamo.frontend": [("--http-port", 8000, "--http-host", "0.0.0.0")],
}
SECRET_FLAG = re.compile(r"^--(api-key|hf-token|[a-z-]*(token|secret|password))$")
ADDRESS_PLACEHOLDER = re.compile(
    r"^((PREFILL|DECODE)_NODE_\d+|HEAD_IP|VLLM_INSTANCE_\d+|MOONCAKE_MASTER_IP|DYN_CONTROL_IP)$")
API_KEY = "sk-consistency-0123456789"


def _golden_shapes() -> list[tuple[str, dict]]:
    path = SHARED / "golden" / "cases.jsonl"
    if not path.exists():
        return []
    shapes: dict[tuple, tuple[str, dict]] = collections.OrderedDict()
    for line in path.read_text().splitlines():
        c = json.loads(line)
        s = c["selection"]
        if "hardware" not in s:
            continue
        pd = s.get("pd") or {}
        key = (c["expected"].get("deploy_type"), s.get("strategy"),
               tuple(sorted((k, v.get("nodes", 0) > 1) for k, v in pd.items())),
               s.get("kv_offload"), s.get("install_mode"))
        shapes.setdefault(key, (c["id"], {**s, "_catalog": "snapshot"}))
    return list(shapes.values())


DSV3 = {"model": "deepseek-ai/DeepSeek-V3", "hardware": "h200"}
EXPLICIT = [
    ("single h200 with an API key", {"model": "Qwen/Qwen3-32B", "hardware": "h200",
                                     "advanced_args": [f"--api-key {API_KEY}"]}),
    ("single mi300x", {"model": "Qwen/Qwen3-32B", "hardware": "mi300x"}),
    ("single xeon6 (CPU)", {"model": "Qwen/Qwen3-1.7B", "hardware": "xeon6"}),
    ("single trillium (TPU)", {"model": "Qwen/Qwen3-32B", "hardware": "trillium"}),
    ("single docker", {"model": "Qwen/Qwen3-32B", "hardware": "h200", "install_mode": "docker"}),
    *((f"multi-node {s}", {**DSV3, "strategy": s, "nodes": 2}) for s in
      ("multi_node_tp", "multi_node_tep", "multi_node_dep", "multi_node_tp_pp")),
    ("multi-node DEP over 3 (hybrid LB)", {**DSV3, "strategy": "multi_node_dep", "nodes": 3}),
    *((f"PD {c}", {**DSV3, "strategy": "pd_cluster", "nodes": 2, "connector": c}) for c in ("nixl", "mooncake")),
    ("PD moriio", {"model": "deepseek-ai/DeepSeek-V3", "hardware": "mi300x", "strategy": "pd_cluster", "nodes": 2,
                   "connector": "moriio"}),
    *((f"PD router {r}", {**DSV3, "strategy": "pd_cluster", "nodes": 2, "router": r})
      for r in ("vllm", "smg", "dynamo")),
    ("PD multi-node pools", {"model": "Qwen/Qwen3-Coder-480B-A35B-Instruct", "hardware": "h200",
                             "strategy": "pd_cluster", "pd": {"prefill": {"nodes": 2}, "decode": {"nodes": 2}}}),
    ("PD co-located", {"model": "Qwen/Qwen3-Coder-480B-A35B-Instruct", "hardware": "h200", "strategy": "pd_cluster",
                       "pd": {"prefill": {"nodes": 0}, "decode": {"nodes": 0}}}),
    ("kv_store", {"model": "Qwen/Qwen3-32B", "hardware": "h200", "kv_offload": "kv_store_centralized_mooncake",
                  "kv_instances": {"count": 2}}),
    # the corrected builder commands (docs/synthesis.md §7): headless TP+DP workers, LMCache beside a
    # docker serve, MiniMax-H3's source mount
    *((f"multi-node TP+DP {m} (headless workers)", {"model": "thinkingmachines/Inkling", "hardware": "gb200",
                                                     "strategy": "multi_node_tp_dp", "nodes": 2, "install_mode": m})
      for m in ("pip", "docker")),
    ("LMCache docker", {"model": "Qwen/Qwen3-8B", "hardware": "h200", "kv_offload": "lmcache",
                        "install_mode": "docker"}),
    ("MiniMax-H3 docker", {"model": "MiniMaxAI/MiniMax-H3", "hardware": "h200", "install_mode": "docker"}),
]
SHAPES = [*EXPLICIT, *_golden_shapes()]


@pytest.fixture(scope="module")
def catalogs():
    """The bundled catalog (PD connectors, SMG and Dynamo routers) and ../shared's recipes snapshot
    (the golden cases)."""
    return {"bundled": load_catalog(), "snapshot": load_catalog(RECIPES)}


def exports(catalogs, selection: dict) -> dict[str, Any]:
    """Every export of one selection (``_catalog``: which catalog, default the bundled one): the plan
    file data, its text, the node scripts, the sbatch script, the Kubernetes manifests (``{file: [docs]}``)."""
    selection = dict(selection)
    catalog = catalogs[selection.pop("_catalog", "bundled")]
    # as `plan` exports them: through the planner, so the corrections of docs/synthesis.md §7 apply
    plan = plan_selection(catalog, selection_from_data(selection), strict=False).plan
    doc = json.loads(json.dumps(plan_file(plan, {"catalog_source": "test"}, "0.1.0")))
    profile = catalog.taxonomy.hardware_profiles[plan.resolved["hardware"]]
    k8s = kubernetes_manifests(doc, image="vllm/vllm-openai:latest", vendor=profile.brand,
                               arch=profile.compute_arch or profile.generation,
                               values={"MOONCAKE_DEVICE_NAME": "mlx5_0", "MOONCAKE_STORE_DEVICE_NAME": "mlx5_1"})
    labels = {p.name: node_label(plan, p) for p in plan.processes}
    return {"plan": doc, "text": plan_text(plan), "scripts": node_scripts(plan), "labels": labels,
            "sbatch": sbatch_script(doc, Path("/shared/plan.yaml")), "k8s": dict(k8s)}


# ---------------------------------------------------------------- the checker


def _run_argv(c: dict) -> list[str]:
    """The argv a container runs: ``command + args``, without a ``/bin/sh -c SCRIPT`` prelude."""
    argv = [*c.get("command", []), *c.get("args", [])]
    if argv[:2] == ["/bin/sh", "-c"]:
        argv = argv[3:]
    return argv


def _exe(argv: list[str]) -> str:
    if len(argv) > 2 and argv[1] == "-m":
        return argv[2]
    return Path(argv[0]).name if argv else ""


def bound(c: dict) -> dict[int, str]:
    """``{port: address it binds}`` of one container, from its argv and env."""
    argv = _run_argv(c)
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    out: dict[int, str] = {}
    for port_flag, port, host_flag, host in LISTENERS.get(_exe(argv), []):
        p = last_flag_value(argv, port_flag)
        if _exe(argv) == "vllm" and "--headless" in argv:
            continue
        out[int(p) if p and p.isdigit() else port] = last_flag_value(argv, host_flag) or host
    if _exe(argv) not in LISTENERS:  # another server: its --port-like flags, bound where its --host says
        host = last_flag_value(argv, "--host") or "0.0.0.0"
        for i, a in enumerate(argv):
            flag, eq, value = a.partition("=")
            if not eq:
                value = argv[i + 1] if i + 1 < len(argv) else ""
            if re.fullmatch(r"-{1,2}[a-z_-]*port", flag) and value.isdigit():
                out[int(value)] = host
        for a in argv:
            m = re.search(r"https?://([^:/]+):(\d+)", a)
            if m and "listen" in " ".join(argv[max(0, argv.index(a) - 1):argv.index(a)]):
                out[int(m.group(2))] = m.group(1)
    discovery = last_flag_value(argv, "--vllm-discovery-address")  # a router MoRIIO engines register with
    if discovery:
        host, _, port = discovery.rpartition(":")
        out[int(port)] = host
    config = last_flag_value(argv, "--kv-transfer-config") or ""
    if "MoRIIOConnector" in config:  # vLLM 0.32.0 moriio_common.py: host_ip, else get_ip() (the pod's address)
        extra = json.loads(config).get("kv_connector_extra_config") or {}
        host = extra.get("host_ip") or "$(POD_IP)"
        tp = int(last_flag_value(argv, "--tensor-parallel-size") or 1)
        local = int(last_flag_value(argv, "--data-parallel-size-local") or 1)
        out[int(extra["handshake_port"])] = host
        for d in range(local):
            for t in range(tp):  # get_port_offset(dp_rank, tp_rank) with its default tp_size=1
                out[int(extra["notify_port"]) + d + t] = host
    if any("NixlConnector" in a for a in argv):
        base = int(env.get("VLLM_NIXL_SIDE_CHANNEL_PORT") or 5600)
        start = last_flag_value(argv, "--data-parallel-start-rank")
        local = int(last_flag_value(argv, "--data-parallel-size-local") or 1)
        size = int(last_flag_value(argv, "--data-parallel-size") or local)
        # a worker template computes its start rank from LWS_WORKER_INDEX: any rank of the group
        ranks = range(int(start), int(start) + local) if start and start.isdigit() else (
            range(size) if "LWS_WORKER_INDEX" in " ".join(c.get("args", [])) else range(local))
        for r in ranks:
            out[base + r] = env.get("VLLM_NIXL_SIDE_CHANNEL_HOST") or "localhost"
    return out


#: Flags whose values are an engine's base URL (routers).
URL_FLAGS = ("--prefill", "--decode", "--backend-url", "--worker-urls")


def reaches(c: dict) -> list[tuple[str, int, str]]:
    """``(host, port, what)`` of every address a container connects to: the engines a router routes
    to, URLs in its env (``ETCD_ENDPOINTS``), a MoRIIO engine's router (``proxy_ip``), what an
    init container waits for."""
    argv = _run_argv(c)
    out = []
    for flag, value in zip(argv, argv[1:], strict=False):
        m = re.match(r"https?://([^:/]+):(\d+)", value)
        if flag in URL_FLAGS and m:
            out.append((m.group(1), int(m.group(2)), f"{flag} {value}"))
        if flag == "--kv-transfer-config" and "proxy_ip" in value:
            extra = json.loads(value).get("kv_connector_extra_config") or {}
            out.append((extra["proxy_ip"], int(extra["proxy_ping_port"]), "MoRIIO proxy_ip"))
    for e in c.get("env", []):
        m = re.match(r"https?://([^:/]+):(\d+)", e.get("value") or "")
        if m:
            out.append((m.group(1), int(m.group(2)), f"env {e['name']}"))
    if c.get("command", [])[:2] == ["python3", "-c"] and len(c.get("args", [])) == 3:  # a wait init container
        out.append((c["args"][0], int(c["args"][1]), "waits for"))
    return out


def _templates(doc: dict) -> list[tuple[dict, dict]]:
    """(pod labels, pod spec) of every pod template of a workload."""
    if doc["kind"] == "Deployment":
        t = doc["spec"]["template"]
        return [(t["metadata"]["labels"], t["spec"])]
    if doc["kind"] == "LeaderWorkerSet":
        t = doc["spec"]["leaderWorkerTemplate"]
        return [(x["metadata"]["labels"], x["spec"]) for x in (t["leaderTemplate"], t["workerTemplate"])]
    return []


def k8s_problems(files: dict[str, list[dict]], device_count: int, secrets: list[str]) -> list[str]:
    """What is wrong in a set of manifests (see the module docstring); [] when nothing."""
    problems: list[str] = []
    docs = [d for ds in files.values() for d in ds]
    pods = [(d["metadata"]["name"], labels, spec) for d in docs for labels, spec in _templates(d)]
    text = json.dumps(docs)
    for s in secrets:
        if s in text:
            problems.append(f"secret {s[:6]}… written inline")
    for d in (d for d in docs if d["kind"] == "Service"):
        sel = d["spec"]["selector"]
        chosen = [(n, spec) for n, labels, spec in pods if all(labels.get(k) == v for k, v in sel.items())]
        if not chosen:
            problems.append(f"Service {d['metadata']['name']}: selects no pod")
        headless = d["spec"].get("clusterIP") == "None"
        for port in d["spec"]["ports"]:
            target = port["targetPort"]
            binds = [bound(c).get(target) for _, spec in chosen for c in spec["containers"]]
            good = [h for h in binds if h in POD_REACHABLE]
            if not good or (not headless and len(good) < len(chosen)):
                problems.append(f"Service {d['metadata']['name']} port {target}: its pods bind it on {binds} "
                                "(not an address other pods reach)")
    services = {d["metadata"]["name"]: {p["port"] for p in d["spec"]["ports"]} for d in docs if d["kind"] == "Service"}
    for name, _, spec in pods:
        for c in [*spec.get("initContainers", []), *spec["containers"]]:
            where = f"{name}/{c['name']}"
            for host, port, what in reaches(c):
                if host == "$(LWS_LEADER_ADDRESS)":
                    continue
                if port not in services.get(host, ()):
                    problems.append(f"{where}: {what} reaches {host}:{port}, which no Service serves")
            strings = [*c.get("command", []), *c.get("args", []), *(e.get("value") or "" for e in c.get("env", []))]
            left = [t for s in strings for t in ph.names_in([s.replace("$$", "")])]
            if left:
                problems.append(f"{where}: placeholder ${left[0]} left unfilled")
            defined = {e["name"] for e in c.get("env", [])} | LWS_VARS
            for s in strings:
                for var in re.findall(r"(?<!\$)\$\(([A-Za-z_][A-Za-z0-9_]*)\)", s):
                    if var not in defined:
                        problems.append(f"{where}: reads $({var}), which its container does not set")
            for e in c.get("env", []):
                if re.search(r"TOKEN|KEY|SECRET|PASSWORD", e["name"]) and "value" in e:
                    problems.append(f"{where}: env {e['name']} inline, not from Secret {SECRET_NAME}")
            argv = _run_argv(c)
            for flag, value in zip(argv, argv[1:], strict=False):
                if SECRET_FLAG.match(flag) and not value.startswith("$("):
                    problems.append(f"{where}: {flag} value inline")
            if c in spec.get("initContainers", []):
                continue
            binds = bound(c)
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                if probe in c:
                    action = c[probe].get("httpGet") or c[probe].get("tcpSocket")
                    if binds.get(action["port"]) not in POD_REACHABLE:
                        problems.append(f"{where}: {probe} on port {action['port']}, which it binds on "
                                        f"{binds.get(action['port'])}")
            for port in c.get("ports", []):
                if port["containerPort"] not in binds:
                    problems.append(f"{where}: containerPort {port['containerPort']} is bound by nothing in it")
            limits = c.get("resources", {}).get("limits", {})
            devices = [v for k, v in limits.items() if k in DEVICE_RESOURCES.values()]
            if devices and devices[0] > device_count:
                problems.append(f"{where}: requests {devices[0]} devices, the node has {device_count}")
            if devices and (want := devices_on_node(argv)) and devices[0] != want:
                problems.append(f"{where}: requests {devices[0]} devices, its command uses {want}")
            requests = c.get("resources", {}).get("requests", {})
            if not devices and not {"cpu", "memory"} <= set(requests):
                problems.append(f"{where}: no device and no cpu/memory request")
    return problems


def _fill_before_launch(text: str) -> set[str]:
    line = next((ln for ln in text.splitlines() if ln.startswith("# fill before launch:")), "")
    return set(re.findall(r"\$([A-Z_][A-Z0-9_]*)", line))


def _slurm_device_problems(sbatch: str, plan: dict) -> list[str]:
    """What is wrong in the devices an sbatch script asks for (see the module docstring)."""
    asked = [int(n) for n in re.findall(r"^#SBATCH --(?:gpus-per-node=|gres=gpu:)(\d+)", sbatch, re.M)]
    if plan.get("accelerator") not in ("cuda", "rocm"):
        return [f"a {plan.get('accelerator')} plan requests GPUs: {asked}"] if asked else []
    pinned: dict[str, int] = collections.Counter()  # co-located pools pin disjoint ids: they add up
    flagged: dict[str, int] = collections.Counter()
    for p in plan["processes"]:
        if p.get("role") not in ("serve", "head", "worker", "prefill", "decode"):
            continue
        pins = [v for k, v in (p.get("env") or {}).items() if k.endswith("_VISIBLE_DEVICES") and "$" not in v]
        if pins:
            pinned[p["node"]] += len(pins[0].split(","))
        else:
            flagged[p["node"]] = max(flagged[p["node"]], devices_on_node(p["argv"]) or int(plan["device_count"]))
    need = max([*pinned.values(), *flagged.values(), 0])
    if not asked:
        return [f"a GPU plan whose engines use {need} GPUs per node requests none"] if need else []
    problems = []
    if asked[0] > int(plan["device_count"]):
        problems.append(f"requests {asked[0]} GPUs per node, the node has {plan['device_count']}")
    if asked[0] < need:
        problems.append(f"requests {asked[0]} GPUs per node, its engines use {need}")
    router = next((ln for ln in sbatch.splitlines() if "srun --overlap" in ln), None)
    if router is not None and "--gres=none" not in router:
        problems.append("the router's step takes the job's GPUs")
    return problems


def slurm_problems(sbatch: str, doc: dict, text: str, secrets: list[str]) -> list[str]:
    """What is wrong in an sbatch script for plan-file ``doc`` (see the module docstring)."""
    problems = [f"secret {s[:6]}… written inline" for s in secrets if s in sbatch]
    plan = doc["plan"]
    labels = sorted({p["node"] for p in plan["processes"]})
    nodes = int(re.search(r"#SBATCH --nodes=(\d+)", sbatch).group(1))
    if "router" in labels and len(labels) > 1 and nodes != len(labels) - 1:
        problems.append(f"{nodes} nodes asked for {len(labels)} machines: the router takes a node of its own")
    problems += _slurm_device_problems(sbatch, plan)
    line = next(ln for ln in sbatch.splitlines() if ln.startswith("export WIZARD_SETS="))
    passed = set(shlex.split(line.partition("=")[2])[0].split())
    for name in passed:
        if not re.search(rf"^export {name}=", sbatch, re.M):
            problems.append(f"--set {name} passed but never exported")
    defaults = set(plan.get("placeholder_defaults") or {})
    listed = _fill_before_launch(text)
    config_holes = ph.names_in(json.dumps(t) for t in (plan.get("config_files") or {}).values())
    router_apart = "router" in labels and len(labels) > 1
    for name in dict.fromkeys([*plan["placeholders"], *config_holes]):
        if name == "ROUTER_HOST" and router_apart:  # the engines may reach it there (MoRIIO's proxy_ip)
            if name not in passed:
                problems.append("$ROUTER_HOST (the router machine's address) is not passed to the tasks")
        elif ADDRESS_PLACEHOLDER.match(name):
            if name not in passed and name not in defaults:
                problems.append(f"${name} (a machine's address) is not passed to the tasks")
        elif name.endswith("DEVICE_NAME"):
            continue  # "" = Mooncake picks the RDMA NICs
        elif name not in passed | defaults | NODE_ADDRESS | SELF_IFACE | HEAD_ADDRESS and name not in listed:
            problems.append(f"${name} is neither filled nor listed in 'fill before launch'")
    return problems


def script_problems(scripts: dict[str, str], doc: dict, text: str, secrets: list[str]) -> list[str]:
    """What is wrong in the per-node scripts (see the module docstring)."""
    problems: list[str] = []
    plan = doc["plan"]
    listed = _fill_before_launch(text)
    for fname, body in scripts.items():
        problems += [f"{fname}: secret {s[:6]}… written inline" for s in secrets if s in body]
        guarded = set(re.findall(r'^: "\$\{([A-Z_][A-Z0-9_]*):[?=]', body, re.M))
        exported = set(re.findall(r"^\s*export ([A-Z_][A-Z0-9_]*)=", body, re.M))
        required = set(re.findall(r'^: "\$\{([A-Z_][A-Z0-9_]*):\?', body, re.M))
        secret_vars = set(re.findall(r'^: "\$\{([A-Z_][A-Z0-9_]*):\?export \1 \(the value of --', body, re.M))
        funcs = "\n".join(ln for ln in body.splitlines() if ln.startswith("  "))
        for name in ph.names_in([funcs]):
            if name not in guarded | exported | {"SECONDS", "WAIT_TIMEOUT"}:
                problems.append(f"{fname}: reads ${name}, neither exported nor checked")
        if "start_router()" not in body and re.search(r'^: "\$\{ROUTER_HOST:=', body, re.M):
            problems.append(f"{fname}: defaults $ROUTER_HOST, the router's address, on a machine without the router")
        bind = re.search(r'^: "\$\{ROUTER_HOST:=([^}]*)\}"', body, re.M)
        if ("start_router()" in body and bind and bind.group(1) in LOOPBACK
                and len([f for f in scripts if f != fname]) > 1):
            problems.append(f"{fname}: the router binds {bind.group(1)} by default, which the plan's other "
                            "machines (and clients) can't reach")
        for name in required - listed - secret_vars:
            problems.append(f"{fname}: stops without ${name}, which 'fill before launch' does not list")
        for ids in re.findall(r"_VISIBLE_DEVICES=([0-9,]+)", body):
            if any(int(x) >= int(plan["device_count"]) for x in ids.split(",")):
                problems.append(f"{fname}: pins devices {ids}, the node has {plan['device_count']}")
        for url in re.findall(r'--(?:prefill|decode|backend-url) "?(https?://[^" ]+)', body):
            if f'wait_remote "{url}/health"' not in body and f"wait_remote {url}/health" not in body:
                problems.append(f"{fname}: routes to {url} without waiting for it")
        problems += _checkout_fetch_problems(fname, body, plan.get("install_mode"))
    return problems


def _checkout_fetch_problems(fname: str, body: str, install_mode: str | None) -> list[str]:
    """A pip-mode ``vllm serve`` passing ``--chat-template examples/….jinja`` (a vLLM checkout file a
    pip install lacks) fetches it first, unless it is there (docker: the image's working folder has it)."""
    problems = []
    for block in re.findall(r"^start_\w+\(\) \{.*?^\}", body, re.M | re.S):
        serve = block.split("exec ", 1)
        for path in re.findall(r"--chat-template '?(examples/[^\s']+)", serve[-1]):
            if install_mode == "docker" or serve[-1].startswith("docker"):
                continue
            if f"if [ ! -e {path} ]" not in serve[0] or "curl -fL --create-dirs -o " + path not in serve[0]:
                problems.append(f"{fname}: passes --chat-template {path} without fetching it first")
    return problems


def all_problems(ex: dict) -> list[str]:
    secrets = [API_KEY] if API_KEY in json.dumps(ex["plan"]) else []
    return [*k8s_problems(ex["k8s"], int(ex["plan"]["plan"]["device_count"]), secrets),
            *slurm_problems(ex["sbatch"], ex["plan"], ex["text"], secrets),
            *script_problems(ex["scripts"], ex["plan"], ex["text"], secrets)]


# ---------------------------------------------------------------- the tests


@pytest.mark.parametrize("selection", [s for _, s in SHAPES], ids=[i for i, _ in SHAPES])
def test_every_export_shape_is_consistent(catalogs, selection) -> None:
    problems = all_problems(exports(catalogs, selection))
    assert not problems, "\n".join(problems)


def test_a_router_bound_to_localhost_fails_the_checker(catalogs) -> None:
    ex = exports(catalogs, {**DSV3, "strategy": "pd_cluster", "nodes": 2})
    assert not all_problems(ex)
    planted = copy.deepcopy(ex)
    router = next(d for ds in planted["k8s"].values() for d in ds
                  if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("router"))
    c = router["spec"]["template"]["spec"]["containers"][0]
    c["args"][c["args"].index("--host") + 1] = "localhost"
    problems = all_problems(planted)
    assert any("Service vllm-router port 30000" in p for p in problems), problems
    assert any("readinessProbe on port 30000, which it binds on localhost" in p for p in problems), problems


def test_the_router_script_of_a_plan_spanning_machines_binds_every_interface(catalogs) -> None:
    """``plan --script``'s router.sh used to take the plan's one-machine ``ROUTER_HOST=localhost``
    on a machine of its own (issue #21): no client or engine machine reached it. It binds 0.0.0.0
    there (as ``--k8s`` does) and says so at the top; a one-machine (co-located) plan keeps
    localhost. Planting localhost back fails the checker."""
    ex = exports(catalogs, {**DSV3, "strategy": "pd_cluster", "nodes": 2})
    router = ex["scripts"]["router.sh"]
    assert ': "${ROUTER_HOST:=0.0.0.0}"' in router
    assert "# The router binds $ROUTER_HOST, default 0.0.0.0: every interface of this machine" in router
    planted = copy.deepcopy(ex)
    planted["scripts"]["router.sh"] = router.replace("ROUTER_HOST:=0.0.0.0", "ROUTER_HOST:=localhost")
    assert "router.sh: the router binds localhost by default, which the plan's other machines (and clients) " \
           "can't reach" in all_problems(planted)
    local = exports(catalogs, {"model": "MiniMaxAI/MiniMax-M2", "hardware": "h200", "strategy": "pd_cluster",
                               "nodes": 1})["scripts"]
    assert sorted(local) == ["node-0.sh", "router.sh"] and ': "${ROUTER_HOST:=localhost}"' in local["router.sh"]
    assert "default localhost: reachable from this machine only" in local["router.sh"]


def test_a_side_channel_on_a_service_name_and_an_unpassed_pool_address_fail_the_checker(catalogs) -> None:
    ex = exports(catalogs, {**DSV3, "strategy": "pd_cluster", "nodes": 2})
    planted = copy.deepcopy(ex)
    prefill = next(d for ds in planted["k8s"].values() for d in ds
                   if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("prefill-0"))
    env = prefill["spec"]["template"]["spec"]["containers"][0]["env"]
    next(e for e in env if e["name"] == "VLLM_NIXL_SIDE_CHANNEL_HOST")["value"] = "vllm-prefill-0"
    planted["sbatch"] = planted["sbatch"].replace(" DECODE_NODE_1", "")
    problems = all_problems(planted)
    assert any("port 5557" in p and "vllm-prefill-0" in p for p in problems), problems
    assert "$DECODE_NODE_1 (a machine's address) is not passed to the tasks" in problems


def test_engines_pinging_their_own_pod_for_the_router_fail_the_checker(catalogs) -> None:
    """MoRIIO engines reach the router at ``proxy_ip``: the router's bind address (0.0.0.0) there is
    the engine itself."""
    ex = exports(catalogs, {"model": "deepseek-ai/DeepSeek-V3", "hardware": "mi300x", "strategy": "pd_cluster",
                            "nodes": 2, "connector": "moriio"})
    assert not all_problems(ex)
    planted = copy.deepcopy(ex)
    prefill = next(d for ds in planted["k8s"].values() for d in ds
                   if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("prefill-0"))
    args = prefill["spec"]["template"]["spec"]["containers"][0]["args"]
    i = args.index("--kv-transfer-config") + 1
    args[i] = args[i].replace('"proxy_ip":"vllm-router"', '"proxy_ip":"0.0.0.0"')
    planted["sbatch"] = planted["sbatch"].replace(" ROUTER_HOST'", "'")
    problems = all_problems(planted)
    assert "vllm-prefill-0/prefill-0: MoRIIO proxy_ip reaches 0.0.0.0:36367, which no Service serves" in problems
    assert "$ROUTER_HOST (the router machine's address) is not passed to the tasks" in problems


def test_a_gpu_job_without_a_gpu_request_fails_the_checker(catalogs) -> None:
    ex = exports(catalogs, {**DSV3, "strategy": "pd_cluster", "nodes": 2})
    assert not all_problems(ex)
    planted = copy.deepcopy(ex)
    planted["sbatch"] = planted["sbatch"].replace("#SBATCH --gpus-per-node=8\n", "")
    assert "a GPU plan whose engines use 8 GPUs per node requests none" in all_problems(planted)
    planted["sbatch"] = ex["sbatch"].replace("--gpus-per-node=8", "--gpus-per-node=4").replace(" --gres=none", "")
    problems = all_problems(planted)
    assert "requests 4 GPUs per node, its engines use 8" in problems
    assert "the router's step takes the job's GPUs" in problems


def test_a_pip_script_fetches_the_checkout_chat_template_once_before_vllm_serve(catalogs, tmp_path) -> None:
    """The fetch step runs before ``vllm serve`` with the installed release (``+cpu`` dropped) and is
    skipped when the file is there; a script without it fails the checker."""
    import subprocess

    scripts = exports(catalogs, {**DSV3, "strategy": "pd_cluster", "nodes": 2})["scripts"]
    body = next(b for b in scripts.values() if "--chat-template examples/" in b)
    block = re.search(r"^start_\w+\(\) \{.*?^\}", body, re.M | re.S).group(0)
    fetch = block.split("exec ", 1)[0].split("\n")
    start = next(i for i, ln in enumerate(fetch) if ln.strip().startswith("if [ ! -e examples/"))
    step = "\n".join(ln.strip() for ln in fetch[start:start + 4])
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "vllm").write_text("#!/bin/sh\necho 'INFO noise' >&2\necho 0.32.0+cpu\n")
    (bin_ / "curl").write_text('#!/bin/sh\necho "$@" >> "$CURL_LOG"\nmkdir -p examples && : > "$4"\n')
    for f in bin_.iterdir():
        f.chmod(0o755)
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "CURL_LOG": str(tmp_path / "curl.log")}
    for _ in range(2):
        subprocess.run(["bash", "-euo", "pipefail", "-c", step], cwd=tmp_path, env=env, check=True)
    [call] = (tmp_path / "curl.log").read_text().splitlines()  # the second run finds the file
    assert call == ("-fL --create-dirs -o examples/tool_chat_template_deepseekv3.jinja https://raw.githubusercontent.com/"
                    "vllm-project/vllm/v0.32.0/examples/tool_chat_template_deepseekv3.jinja")
    # Kubernetes: no fetch; the container starts in the image's WORKDIR (/vllm-workspace holds examples/)
    k8s = exports(catalogs, {**DSV3, "strategy": "pd_cluster", "nodes": 2})["k8s"]
    serving = [c for docs in k8s.values() for doc in docs for _, t in _templates(doc)
               for c in t.get("containers", []) if "--chat-template" in [*c.get("command", []), *c.get("args", [])]]
    assert serving and all("workingDir" not in c for c in serving)
    stripped = {f: re.sub(r"^  if \[ ! -e examples/.*?^  fi\n", "", b, flags=re.M | re.S) for f, b in scripts.items()}
    assert any("without fetching it first" in x for x in _checkout_fetch_problems_all(stripped))


def _checkout_fetch_problems_all(scripts: dict[str, str]) -> list[str]:
    return [x for f, b in scripts.items() for x in _checkout_fetch_problems(f, b, "pip")]
