"""Group health of a multi-node vLLM (docs/multi-node.md §1–§2): what the plan file says, how the
launcher reads it, and what the supervisor does with it — policy with a fake clock, real children
for the probes."""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml
from children import PY, until

from vllm_deploy_wizard.catalog.node_groups import add_group_supervision, groups, master_address
from vllm_deploy_wizard.cli import main
from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.launcher.plan_file import parse_plan
from vllm_deploy_wizard.launcher.policy import Exited, Policy, ProbePassed, Signal, Started, StartTimer, Unhealthy
from vllm_deploy_wizard.launcher.ports import free_port
from vllm_deploy_wizard.launcher.spec import Liveness, Probe, ProcessSpec, RestartPolicy, RunSpec
from vllm_deploy_wizard.launcher.states import ProcessEvent, State
from vllm_deploy_wizard.launcher.supervisor import Supervisor


@pytest.fixture
def recipes(shared):
    return ["--recipes", str(shared / "recipes-snapshot")]


def _plan(tmp_path, *args) -> dict:
    out = tmp_path / "plan.yaml"
    assert main(["plan", *args, "--out", str(out)]) == 0
    return yaml.safe_load(out.read_text())


def test_a_multi_node_plan_file_supervises_its_group(tmp_path, recipes) -> None:
    data = _plan(tmp_path, *recipes, "--model", "ByteDance-Seed/Seed-OSS-36B-Instruct", "--hardware", "b200",
                 "--strategy", "multi_node_tp", "--nodes", "3")
    procs = {p["name"]: p for p in data["plan"]["processes"]}
    head = procs["vllm-head"]
    assert head["env"]["VLLM_HOST_IP"] == "$HEAD_IP"  # the head advertises its master address
    assert head["health"]["liveness"] == {"url": "http://127.0.0.1:8000/v1/completions",
                                          "body": {"prompt": "ping", "max_tokens": 1},
                                          "timeout_s": 120.0, "failure_threshold": 3}
    for w in ("vllm-worker-1", "vllm-worker-2"):
        worker = procs[w]
        assert worker["env"]["VLLM_HOST_IP"] == "$NODE_IP"
        assert worker["health"]["url"] == "http://$HEAD_IP:8000/health" and worker["health"]["remote"] is True
        assert worker["health"]["liveness"]["url"] == "http://$HEAD_IP:8000/health"
        assert worker["restart"]["max_failures"] >= 4
    assert "NODE_IP" in data["plan"]["placeholders"]
    # the worker's run reads it: remote readiness on the head, liveness while READY
    spec = parse_plan(data, node="node-2", values={"HEAD_IP": "10.0.0.1", "IFACE_NAME": "eth0", "NODE_IP": "10.0.0.3"})
    probe = spec.processes[0].probe
    assert probe.remote and probe.url == "http://10.0.0.1:8000/health"
    assert probe.liveness == Liveness(url="http://10.0.0.1:8000/health", timeout_s=30.0, failure_threshold=3)
    assert spec.processes[0].env["VLLM_HOST_IP"] == "10.0.0.3"
    assert spec.processes[0].restart.max_failures == 6


def test_plan_json_stays_the_recipes_builder_output(capsys, recipes) -> None:
    assert main(["plan", *recipes, "--model", "ByteDance-Seed/Seed-OSS-36B-Instruct", "--hardware", "b200",
                 "--strategy", "multi_node_tp", "--nodes", "2", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert all("VLLM_HOST_IP" not in p["env"] and "liveness" not in (p.get("health") or {})
               for p in plan["processes"])


def test_every_mooncake_instance_is_its_own_group(tmp_path, recipes) -> None:
    data = _plan(tmp_path, *recipes, "--model", "ByteDance-Seed/Seed-OSS-36B-Instruct", "--hardware", "h200",
                 "--strategy", "multi_node_tp", "--nodes", "2", "--kv-offload", "kv_store_centralized_mooncake",
                 "--kv-instances", "2")
    found = groups(data["plan"]["processes"])
    assert sorted(found) == ["instance-0", "instance-1"]
    for g in found.values():
        addr = master_address(g["head"]["argv"])
        assert g["head"]["env"]["VLLM_HOST_IP"] == addr
        assert all(w["health"]["url"].startswith(f"http://{addr}:") for w in g["workers"])
    router = next(p for p in data["plan"]["processes"] if p["role"] == "router")
    assert "liveness" not in (router.get("health") or {}) and "VLLM_HOST_IP" not in router["env"]


def test_single_node_and_data_parallel_shapes(tmp_path, recipes) -> None:
    single = _plan(tmp_path, *recipes, "--model", "ByteDance-Seed/Seed-OSS-36B-Instruct", "--hardware", "b200")
    assert groups(single["plan"]["processes"]) == {} and "NODE_IP" not in single["plan"]["placeholders"]
    dp = {"processes": [
        {"name": "vllm-head", "role": "head", "argv": ["vllm", "serve", "m", "--data-parallel-address=$HEAD_IP"],
         "env": {}, "health": {"url": "http://127.0.0.1:8000/health"}},
        {"name": "vllm-worker-1", "role": "worker", "argv": ["vllm", "serve", "m", "--data-parallel-address",
                                                           "$HEAD_IP", "--headless"], "env": {}, "health": None}]}
    add_group_supervision(dp)
    assert dp["processes"][0]["env"]["VLLM_HOST_IP"] == "$HEAD_IP"
    assert dp["processes"][1]["health"]["url"] == "http://$HEAD_IP:8000/health"


def test_bad_liveness_is_named() -> None:
    data = {"plan_version": 1, "plan": {"processes": [{"name": "x", "argv": ["x"], "health": {
        "url": "http://127.0.0.1:1/health", "liveness": {"url": "ftp://x", "body": [1], "failure_threshold": "two"}}}]}}
    with pytest.raises(LaunchError) as exc:
        parse_plan(data, source="p.yaml")
    msg = str(exc.value)
    assert "health.liveness.url 'ftp://x' is not an http(s) URL" in msg
    assert "health.liveness.body must be a mapping" in msg and "health.liveness.failure_threshold" in msg


# ---------------------------------------------------------------- policy


def _group_spec() -> RunSpec:
    return RunSpec((ProcessSpec(
        name="vllm-head", argv=("vllm", "serve"), role="head", stop_timeout_s=10,
        probe=Probe("http://127.0.0.1:8000/health", liveness=Liveness("http://127.0.0.1:8000/v1/completions")),
        restart=RestartPolicy(max_failures=3, window_s=600)),))


def test_unhealthy_while_ready_stops_and_restarts_with_a_cause() -> None:
    events: list[ProcessEvent] = []
    pol = Policy(_group_spec(), emit=events.append)
    pol.start(0)
    pol.handle(Started("vllm-head", 10), 1)
    pol.handle(ProbePassed("vllm-head"), 2)
    acts = pol.handle(Unhealthy("vllm-head", "http://127.0.0.1:8000/v1/completions failed 2 polls in a row: HTTP 500"),
                      30)
    assert acts == [Signal("vllm-head", 15), StartTimer("vllm-head", "kill", 10)]
    assert pol.states["vllm-head"].state is State.READY  # until it has exited
    acts = pol.handle(Exited("vllm-head", 0), 31)
    last = events[-1]
    assert last.state is State.BACKOFF and "liveness failing" in last.detail
    assert last.cause["kind"] == "unhealthy" and "HTTP 500" in last.cause["summary"]
    assert any(isinstance(a, StartTimer) and a.kind == "backoff" for a in acts)


def test_unhealthy_is_ignored_unless_ready() -> None:
    pol = Policy(_group_spec())
    pol.start(0)
    pol.handle(Started("vllm-head", 10), 1)
    assert pol.handle(Unhealthy("vllm-head", "x"), 2) == []  # STARTING: the ready timeout governs
    assert pol.states["vllm-head"].state is State.STARTING


# ---------------------------------------------------------------- supervisor with real children

#: Serves GET /health 200 on argv[1]; POST /v1/completions answers 200 until the file argv[2] exists,
#: then 500 — a head whose worker died.
HEAD = r"""
import http.server, os, sys
port, broken = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def _send(self, code):
        self.send_response(code); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
    def do_GET(self):
        self._send(200 if self.path == "/health" else 404)
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0); self.rfile.read(n)
        self._send(500 if os.path.exists(broken) else 200)
    def log_message(self, *a):
        pass
http.server.HTTPServer.allow_reuse_address = True
srv = http.server.HTTPServer(("127.0.0.1", port), H)
print("listening", port, flush=True)
srv.serve_forever()
"""


async def test_a_failing_liveness_restarts_the_process_and_a_remote_probe_counts(tmp_path) -> None:
    port = free_port()
    broken = tmp_path / "broken"
    head = ProcessSpec(
        name="head", argv=(PY, "-c", HEAD, str(port), str(broken)), ports=(port,), stop_timeout_s=5,
        probe=Probe(f"http://127.0.0.1:{port}/health", interval_s=0.1, ready_interval_s=0.1,
                    liveness=Liveness(f"http://127.0.0.1:{port}/v1/completions", body={"prompt": "p", "max_tokens": 1},
                                      timeout_s=2, failure_threshold=2)),
        restart=RestartPolicy(backoff_initial_s=0.1, max_failures=5))
    # a worker: its probe is the head's server, which is not part of its own tree (remote)
    worker = ProcessSpec(
        name="worker", argv=(PY, "-c", "import time; time.sleep(600)"), depends_on=(), stop_timeout_s=5,
        probe=Probe(f"http://127.0.0.1:{port}/health", interval_s=0.1, remote=True))
    seen: list[ProcessEvent] = []
    sup = Supervisor(RunSpec((head, worker)),
                     listeners=[lambda m: seen.append(m) if isinstance(m, ProcessEvent) else None],
                     metrics=False)
    task = asyncio.create_task(sup.run())
    try:
        await until(lambda: sup.policy.states["head"].state is State.READY
                    and sup.policy.states["worker"].state is State.READY, 30, "both READY")
        first = sup.policy.states["head"].pid
        broken.write_text("")
        await until(lambda: any(e.name == "head" and e.state is State.BACKOFF for e in seen), 30, "head BACKOFF")
        ev = next(e for e in seen if e.name == "head" and e.state is State.BACKOFF)
        assert ev.cause["kind"] == "unhealthy" and "HTTP 500" in ev.cause["summary"]
        broken.unlink()
        await until(lambda: sup.policy.states["head"].state is State.READY and sup.policy.states["head"].pid != first,
                    30, "head READY again")
    finally:
        sup.stop("test over")
        await asyncio.wait_for(task, 30)


# ---------------------------------------------------------------- causes of a group that does not form

#: Lines a real worker printed (vLLM 0.32 CPU, torch gloo) with a wrong $HEAD_IP, then a stack frame
#: and the retry line our SIGTERM interrupted.
UNREACHABLE = [
    "(Worker pid=20102) INFO 12-01 09:25:28 [parallel_state.py:1906] world_size=2 rank=1 local_rank=0 "
    "distributed_init_method=tcp://198.18.60.99:29501 backend=gloo",
    "[W1201 09:25:41.064175760 socket.cpp:764] [c10d] The client socket has failed to connect to "
    "149.85.0.0:24672 (errno: 113 - No route to host).",
    "[W1201 09:25:41.066325181 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host "
    "198.18.60.99:29501 - retrying (try=0, timeout=1800000ms, delay=365ms): The client socket has failed to "
    "connect to any network address of (198.18.60.99, 29501).",
    "frame #7: c10d::TCPStore::TCPStore(std::__cxx11::basic_string<char>, c10d::TCPStoreOptions const&) + 0x41d",
    "[W1201 09:27:07.457769240 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host "
    "198.18.60.99:29501 - retrying (try=10, timeout=1800000ms, delay=29409ms): Interrupted system call",
]
#: What a real worker printed with IFACE_NAME=eth9 (no such interface on that host).
NO_IFACE = [
    "(Worker pid=25006) ERROR 12-01 09:30:25 [multiproc_executor.py:953]     backend_class = ProcessGroupGloo(",
    "(Worker pid=25006) ERROR 12-01 09:30:25 [multiproc_executor.py:953] RuntimeError: [enforce fail at "
    "/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/device.cc:84] ifa != nullptr. Unable to find "
    "address for: eth9",
    "(EngineCore pid=1) ERROR Engine core proc EngineCore died unexpectedly",
]


def test_worker_causes_name_the_master_address_and_the_interface() -> None:
    from vllm_deploy_wizard.launcher.causes import classify

    c = classify(UNREACHABLE)
    assert c.kind == "master_unreachable"
    assert c.summary == "cannot reach the group's master address 198.18.60.99:29501 (No route to host)"
    assert "$HEAD_IP" in c.fix
    c = classify(NO_IFACE, rc=1)
    assert c.kind == "socket_iface" and "'eth9'" in c.summary and "IFACE_NAME" in c.fix


def test_a_busy_master_port_is_named_on_the_head() -> None:
    from vllm_deploy_wizard.launcher.causes import classify

    line = ("(Worker pid=28908) ERROR 12-01 09:35:09 [multiproc_executor.py:953] torch.distributed.DistNetworkError: "
            "The server socket has failed to listen on any local network address. port: 29501, useIpv6: false, "
            "code: -98, name: EADDRINUSE, message: address already in use")
    c = classify([line], rc=1)
    assert c.kind == "port_in_use" and c.summary == "the group's master port 29501 is already in use on this node"
    assert "--master-port" in c.fix


def test_a_head_not_ready_in_time_says_its_group_never_formed() -> None:
    spec = RunSpec((ProcessSpec(name="vllm-head", argv=("vllm", "serve"), role="head", ready_timeout_s=150,
                                stop_timeout_s=5, probe=Probe("http://127.0.0.1:8000/health")),))
    events: list[ProcessEvent] = []
    pol = Policy(spec, emit=events.append)
    pol.start(0)
    pol.handle(Started("vllm-head", 10), 1)
    from vllm_deploy_wizard.launcher.policy import TimerFired

    pol.handle(TimerFired("vllm-head", "ready"), 151)
    pol.handle(TimerFired("vllm-head", "kill"), 156)
    pol.handle(Exited("vllm-head", -9,
                      cause={"kind": "killed", "summary": "killed by SIGKILL", "fix": "", "line": None}), 157)
    cause = events[-1].cause
    assert cause["kind"] == "ready_timeout"  # our own SIGKILL after the timeout is no OOM kill
    assert "every worker node has joined" in cause["summary"] and "status" in cause["fix"]
