"""``launch plan.yaml --all-nodes`` from the head host: the worker host's supervisor is started over
real OpenSSH (an sshd in each network-namespace host), the plan copied there; ``status --all-nodes``
shows both nodes, ``logs --node`` reads the worker's log, ``stop --all-nodes`` leaves nothing; an
unreachable node is named with ssh's error and nothing starts."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time

import httpx
import netns_hosts
import pytest
import sshd_hosts
from multinode_e2e_support import (
    READY_S,
    WIZARD,
    host_env,
    kill_namespace,
    real_env,
    wait_for,
    wizard_left,
    write_plan,
)

pytestmark = pytest.mark.e2e


def test_all_nodes_from_the_head_over_ssh(tmp_path) -> None:
    for why in (netns_hosts.unavailable(), sshd_hosts.unavailable()):
        if why:
            pytest.skip(why)
    real = real_env()
    plan = write_plan(tmp_path / "plan.yaml", real["model"])
    with netns_hosts.netns_hosts(2) as hosts:
        head, worker = hosts
        try:
            with sshd_hosts.sshd_hosts(hosts, tmp_path / "ssh") as ssh_config:
                env = host_env(real, tmp_path / "node-0" / "state")
                wenv = host_env(real, tmp_path / "node-1" / "state")
                keep = ("PATH", "XDG_STATE_HOME", "NO_COLOR", "HF_HUB_OFFLINE", "VLLM_CPU_KVCACHE_SPACE",
                        "VLLM_NO_USAGE_STATS", "DO_NOT_TRACK")
                remote = shlex.join(["env", *(f"{k}={wenv[k]}" for k in keep), sys.executable, "-m",
                                     "vllm_deploy_wizard"])
                common = ["--ssh-config", str(ssh_config), "--remote-wizard", remote, "--skip-flag-check"]

                def wizard(*args: str, timeout: float = 400) -> subprocess.CompletedProcess:
                    return subprocess.run(head.argv(*WIZARD, *args), env=env, capture_output=True, text=True,
                                          timeout=timeout)

                # an unreachable node: named with ssh's error, nothing started anywhere
                nowhere = head.ip.rsplit(".", 1)[0] + ".99"
                r = wizard("launch", str(plan), "--all-nodes", "--host", f"node-1={nowhere}", *common)
                assert r.returncode == 2, r.stdout + r.stderr
                assert f"node-1 ({nowhere}):" in r.stderr and "nothing started" in r.stderr, r.stderr
                assert not (tmp_path / "node-0" / "state" / "vllm-wizard" / "runs").exists() or not any(
                    (tmp_path / "node-0" / "state" / "vllm-wizard" / "runs").iterdir())

                t0 = time.monotonic()
                r = wizard("launch", str(plan), "--all-nodes", "--host", f"node-1={worker.ip}", *common)
                assert r.returncode == 0, r.stdout + r.stderr
                assert "cluster of 2 nodes started" in r.stdout, r.stdout

                def status() -> list[dict]:
                    s = wizard("status", "--all-nodes", "--json", timeout=60)
                    return json.loads(s.stdout) if s.stdout.strip().startswith("[") else []

                def all_ready() -> bool:
                    rows = status()
                    return len(rows) == 2 and all(
                        r["ok"] and all(p["state"] == "READY" for p in r["run"]["processes"]) for r in rows)

                wait_for(all_ready, READY_S, "both nodes READY in `status --all-nodes`")
                t_ready = time.monotonic() - t0
                rows = status()
                assert [(r["label"], r["dest"]) for r in rows] == [("node-0", None), ("node-1", worker.ip)]
                assert [p["name"] for r in rows for p in r["run"]["processes"]] == ["vllm-head", "vllm-worker-1"]
                c = httpx.post(f"http://{head.ip}:8000/v1/completions", json={"prompt": "Hi", "max_tokens": 4},
                               timeout=120, trust_env=False)
                assert c.status_code == 200, c.text
                text = wizard("status", "--all-nodes", timeout=60).stdout
                assert "node-1" in text and worker.ip in text and "vllm-worker-1" in text and "READY" in text
                plain = wizard("status", timeout=60).stdout  # the head's own run points at the others
                assert f"other nodes: node-1 ({worker.ip})" in plain, plain
                logs = wizard("logs", "--node", "node-1", "vllm-worker-1", "-n", "5", timeout=60)
                assert logs.returncode == 0 and "vllm-worker-1" in logs.stdout, logs.stdout + logs.stderr

                t1 = time.monotonic()
                s = wizard("stop", "--all-nodes", timeout=200)
                assert s.returncode == 0, s.stdout + s.stderr
                wait_for(lambda: not wizard_left(hosts), 30, "nothing left on either node")
                t_stop = time.monotonic() - t1
                print(f"\nall-nodes figures: launch --all-nodes → both nodes READY {t_ready:.1f} s; "
                      f"stop --all-nodes {t_stop:.1f} s")
        finally:
            for h in hosts:
                kill_namespace(h)
