"""Two real hosts (network namespaces) serving one vLLM model by tensor parallelism across them.

The same plan file (``multi_node_tp``, 2 nodes, 1 device each, the test-made tiny model) runs on
each host with ``vllm-wizard launch plan.yaml --node node-k``; ``$HEAD_IP``, ``$IFACE_NAME`` and
``$NODE_IP`` come from each host's own detection (the worker is told the head's address, as an
operator would). Shown: both READY, a completion served by TP=2 across the hosts; the worker's
engine SIGKILLed → the group comes back READY on both hosts (the head's liveness sees the dead
collective, the worker rejoins the restarted head; docs/multi-node.md §2); ``stop`` on each host →
nothing left in either namespace. Figures printed: time to READY, group recovery time, stop time.
"""

from __future__ import annotations

import os
import signal
import time

import httpx
import netns_hosts
import pytest
from multinode_e2e_support import (
    READY_S,
    all_ready,
    causes,
    host_env,
    kill_namespace,
    launch_on,
    netns_pids,
    processes,
    real_env,
    stop_on,
    wait_for,
    write_plan,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def hosts():
    why = netns_hosts.unavailable()
    if why:
        pytest.skip(why)
    with netns_hosts.netns_hosts(2) as made:
        try:
            yield made
        finally:
            for h in made:
                kill_namespace(h)


def _complete(head_ip: str) -> dict:
    r = httpx.post(f"http://{head_ip}:8000/v1/completions", json={"prompt": "The quick brown", "max_tokens": 4},
                   timeout=120, trust_env=False)
    assert r.status_code == 200, r.text
    return r.json()


def test_two_hosts_serve_recover_from_a_dead_worker_and_stop_clean(hosts, tmp_path):
    real = real_env()
    plan = write_plan(tmp_path / "plan.yaml", real["model"])
    head, worker = hosts
    envs = [host_env(real, tmp_path / h.name / "state") for h in hosts]

    t0 = time.monotonic()
    head_run = launch_on(head, envs[0], plan, "node-0")
    worker_run = launch_on(worker, envs[1], plan, "node-1", "--set", f"HEAD_IP={head.ip}")
    runs = [head_run, worker_run]
    wait_for(all_ready(runs), READY_S, "both hosts READY", runs)
    t_ready = time.monotonic() - t0
    out = _complete(head.ip)
    assert out["choices"][0]["text"], out
    assert "tp2" in (out.get("system_fingerprint") or "tp2"), out  # TP 2 across the two hosts

    # the worker's engine dies: its main process and its TP worker, like a lost machine's vLLM
    w = processes(worker_run)["vllm-worker-1"]
    h = processes(head_run)["vllm-head"]
    victims = {w["pid"], *(int(p) for p in (w.get("tree") or {}))}
    t_kill = time.monotonic()
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def recovered() -> bool:
        return (all_ready(runs)() and processes(worker_run)["vllm-worker-1"]["pid"] != w["pid"]
                and processes(head_run)["vllm-head"]["pid"] != h["pid"])

    wait_for(recovered, READY_S, "the group READY again on both hosts with new processes", runs)
    t_recover = time.monotonic() - t_kill
    head_after = processes(head_run)["vllm-head"]
    assert head_after["restarts"] >= 1 and processes(worker_run)["vllm-worker-1"]["restarts"] >= 1
    assert _complete(head.ip)["choices"][0]["text"]

    t_stop0 = time.monotonic()
    for host, env in zip(hosts, envs, strict=True):
        r = stop_on(host, env)
        assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: not any(netns_pids(x) for x in hosts), 30, "no process left in either host")
    t_stop = time.monotonic() - t_stop0
    print(f"\nmulti-node figures: READY across two hosts {t_ready:.1f} s; group recovery after the worker's "
          f"engine was killed {t_recover:.1f} s; stop on both hosts {t_stop:.1f} s")


def test_a_worker_that_cannot_reach_the_head_is_diagnosed_on_both_hosts(hosts, tmp_path):
    """Wrong ``$HEAD_IP`` on the worker: within one readiness timeout the worker names the master
    address it cannot reach and the head says its group never formed."""
    import yaml

    real = real_env()
    plan = write_plan(tmp_path / "plan.yaml", real["model"])
    data = yaml.safe_load(plan.read_text())
    timeout_s = 150
    for proc in data["plan"]["processes"]:
        proc["ready_timeout_s"] = timeout_s
    plan.write_text(yaml.safe_dump(data))
    head, worker = hosts
    wrong = head.ip.rsplit(".", 1)[0] + ".99"  # on the hosts' network, nobody there
    envs = [host_env(real, tmp_path / h.name / "state") for h in hosts]
    t0 = time.monotonic()
    runs = [launch_on(head, envs[0], plan, "node-0"),
            launch_on(worker, envs[1], plan, "node-1", "--set", f"HEAD_IP={wrong}")]

    def found_causes() -> dict[str, dict]:
        return {n: c for r in runs for n, c in causes(r).items()}

    wait_for(lambda: {"vllm-head", "vllm-worker-1"} <= set(found_causes()), timeout_s + 120,
             "a cause on the head and on the worker", runs)
    took = time.monotonic() - t0
    found = found_causes()
    w, h = found["vllm-worker-1"], found["vllm-head"]
    assert w["kind"] == "master_unreachable" and f"{wrong}:" in w["summary"], w
    assert h["kind"] == "ready_timeout" and "every worker node" in h["summary"], h
    for host, env in zip(hosts, envs, strict=True):
        assert stop_on(host, env).returncode == 0
    wait_for(lambda: not any(netns_pids(x) for x in hosts), 30, "no process left in either host")
    print(f"\nmulti-node figures: unreachable head diagnosed on both hosts after {took:.1f} s "
          f"(readiness timeout {timeout_s} s)")
