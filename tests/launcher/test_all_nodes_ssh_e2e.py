"""``launch plan.yaml --all-nodes`` from the head host: the worker host's supervisor is started over
real OpenSSH (an sshd in each network-namespace host), the plan copied there; ``status --all-nodes``
shows both nodes, ``logs --node`` reads the worker's log, the wizard's monitor of the head run lists
both nodes' processes (its table model fed by the same asks over the real sshd), ``stop --all-nodes``
leaves nothing; an unreachable node is named with ssh's error and nothing starts."""

from __future__ import annotations

import dataclasses
import json
import re
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


def _monitor_of_the_head(head_run: str, worker, nowhere: str) -> None:
    """The monitor's process table for the head run (tui/process_rows.py), fed by the real launcher
    port: both nodes' processes READY with the pids ``status`` reports, the worker's log tail over ssh,
    and a node that cannot be reached shown with ssh's error."""
    from vllm_deploy_wizard.launcher.engines.ssh import NodeRun, head_cluster, node_status
    from vllm_deploy_wizard.tui.launch_port import RealLauncher
    from vllm_deploy_wizard.tui.monitor_model import MonitorModel
    from vllm_deploy_wizard.tui.process_rows import ClusterRows

    port = RealLauncher()
    nodes = port.cluster_nodes(head_run)
    assert nodes and [(n.label, n.dest) for n in nodes] == [("node-0", None), ("node-1", worker.ip)]
    table = ClusterRows(nodes)
    assert table.due() == ["node-1"]
    for label in table.due():
        table.asking(label)
        table.answer(label, port.node_status(head_run, label))
    rows = {r.key: r for r in table.rows(MonitorModel().procs)}
    assert rows["node-1/"].cells["state"] == "running", rows["node-1/"].cells
    assert rows["node-1/"].cells["detail"] == f"{worker.ip} · run {nodes[1].run_id}"
    w = rows["node-1/vllm-worker-1"].cells
    assert w["state"] == "READY" and w["ready"] == "✓" and w["pid"].isdigit(), w
    tail = port.node_log_tail(head_run, "node-1", "vllm-worker-1", 20)
    assert any(line.startswith("==> vllm-worker-1 (READY)") for line in tail), tail
    c = head_cluster(head_run)  # the same cluster with the worker's address gone: ssh's error shown
    assert c is not None
    gone = dataclasses.replace(c, nodes=[c.nodes[0], NodeRun("node-1", nowhere, nodes[1].run_id)])
    down = ClusterRows(gone.nodes)
    down.answer("node-1", node_status(gone, gone.nodes[1]))
    row = {r.key: r for r in down.rows({})}["node-1/"].cells
    assert row["state"] == "UNKNOWN" and row["detail"].startswith("unreachable: ssh: connect to host"), row


def test_all_nodes_from_the_head_over_ssh(tmp_path, monkeypatch) -> None:
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
                head_run = re.search(r"head run (\S+)", r.stdout)
                assert head_run, r.stdout
                with monkeypatch.context() as m:  # this test process reads the head's records, as its wizard would
                    m.setenv("XDG_STATE_HOME", env["XDG_STATE_HOME"])
                    m.setenv("PATH", env["PATH"])
                    _monitor_of_the_head(head_run.group(1), worker, nowhere)
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
