"""``launch --all-nodes`` without a network: what it refuses before touching any machine, and an
unreachable node named with ssh's own error (ssh made to fail at once with a ProxyCommand)."""

from __future__ import annotations

import shlex

import pytest
import yaml

from vllm_deploy_wizard.cli import main
from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.launcher.engines.ssh import launch_all_nodes, parse_hosts, ssh_argv


def _plan(tmp_path):
    procs = [{"name": f"n{k}", "role": "serve", "node_rank": k, "node": f"node-{k}", "argv": ["/bin/true"],
              "env": {}, "health": None} for k in range(3)]
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({"plan_version": 1, "plan": {"processes": procs}}))
    return path


@pytest.fixture(autouse=True)
def state_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def test_hosts_are_label_equals_destination() -> None:
    assert parse_hosts(["node-1=root@10.0.0.2", "node-2=gpu-3"]) == {"node-1": "root@10.0.0.2", "node-2": "gpu-3"}
    for bad in ("node-1", "node-1=-oProxyCommand=x", "node 1=h", "node-1=a;b"):
        with pytest.raises(LaunchError, match="expected LABEL=\\[USER@\\]HOST"):
            parse_hosts([bad])


def test_remote_words_are_quoted_for_the_remote_shell() -> None:
    argv = ssh_argv(["-F", "cfg"], "h", ["vllm-wizard", "launch", "p.yaml", "--set", "X=a b;rm -rf ~"])
    assert argv[:5] == ["ssh", "-o", "BatchMode=yes", "-F", "cfg"] and argv[5] == "h"
    assert shlex.split(argv[6]) == ["vllm-wizard", "launch", "p.yaml", "--set", "X=a b;rm -rf ~"]


def test_every_other_machine_needs_a_host(tmp_path) -> None:
    plan = _plan(tmp_path)
    data = yaml.safe_load(plan.read_text())
    with pytest.raises(LaunchError, match=r"--host node-1=\[USER@\]HOST --host node-2=\[USER@\]HOST"):
        launch_all_nodes(plan, data, "node-0", {}, {})
    with pytest.raises(LaunchError, match="--host node-7=…: not a machine of the plan"):
        launch_all_nodes(plan, data, "node-0", {"node-1": "a", "node-2": "b", "node-7": "c"}, {})


def test_unreachable_nodes_are_named_and_nothing_starts(tmp_path, capsys) -> None:
    plan = _plan(tmp_path)
    code = main(["launch", str(plan), "--all-nodes", "--host", "node-1=host-a", "--host", "node-2=host-b",
                 "--ssh-option", "ProxyCommand=false", "--skip-flag-check"])
    err = capsys.readouterr().err
    assert code == 2
    assert "unreachable over ssh, nothing started" in err
    assert "node-1 (host-a):" in err and "node-2 (host-b):" in err
    runs = tmp_path / "state" / "vllm-wizard" / "runs"
    assert not runs.exists() or not any(runs.iterdir())  # not even this machine's node


class FakeSsh:
    """Answers the commands of a cluster launch: every node reachable, ``fail`` fails its launch."""

    def __init__(self, fail: str):
        self.fail = fail
        self.calls: list[list[str]] = []

    def __call__(self, argv, timeout, stdin=None):
        import subprocess

        self.calls.append(list(argv))
        words = shlex.split(argv[-1]) if argv[0] == "ssh" else argv
        if "launch" in words:
            label = words[words.index("--node") + 1]
            if label == self.fail:
                return subprocess.CompletedProcess(argv, 2, b"", b"preflight: port 8000 is in use")
            return subprocess.CompletedProcess(argv, 0, f"launched run run-{label} (supervisor pid 1)".encode(), b"")
        return subprocess.CompletedProcess(argv, 0, b"", b"")


def test_a_node_that_fails_to_start_stops_the_ones_already_started(tmp_path) -> None:
    import io

    plan = _plan(tmp_path)
    data = yaml.safe_load(plan.read_text())
    fake = FakeSsh(fail="node-2")
    out = io.StringIO()
    with pytest.raises(LaunchError, match=r"node-2 \(host-b\): launch failed: preflight: port 8000 is in use"):
        launch_all_nodes(plan, data, "node-0", {"node-1": "host-a", "node-2": "host-b"}, {"HEAD_IP": "10.0.0.1"},
                         out=out, run=fake)
    launches = [c for c in fake.calls if "launch" in " ".join(c)]
    assert [shlex.split(c[-1])[shlex.split(c[-1]).index("--node") + 1] if c[0] == "ssh" else c[c.index("--node") + 1]
            for c in launches] == ["node-0", "node-1", "node-2"]  # this machine first
    assert all("HEAD_IP=10.0.0.1" in " ".join(c) for c in launches)
    stops = [" ".join(c) for c in fake.calls if " stop " in f" {' '.join(c)} "]
    assert len(stops) == 2 and "run-node-1" in stops[0] and "run-node-0" in stops[1]  # newest first
    assert "stopped the nodes already started: node-0, node-1" in out.getvalue()


def _cluster():
    from vllm_deploy_wizard.launcher.engines.ssh import Cluster, NodeRun

    return Cluster(plan="plan.yaml", nodes=[NodeRun("node-0", None, "run-a"), NodeRun("node-1", "10.0.0.2", "run-b"),
                                            NodeRun("node-22", "worker.example", "run-c")])


def test_status_all_nodes_prints_each_nodes_processes_as_the_status_table(monkeypatch, capsys) -> None:
    import argparse

    from vllm_deploy_wizard.commands import nodes
    from vllm_deploy_wizard.commands.process_table import process_lines
    from vllm_deploy_wizard.launcher.engines import ssh

    head = [{"name": "vllm-head", "state": "READY", "pid": 4242, "ports": [8000], "restarts": 0},
            {"name": "router", "state": "BACKOFF", "pid": None, "ports": [], "restarts": 3,
             "cause": {"summary": "port 8000 is in use", "fix": "free it"}, "log": "/logs/router.log"}]
    worker = [{"name": "vllm-worker-1", "state": "STARTING", "pid": 17, "ports": [], "restarts": 1}]
    rows = [{"label": "node-0", "dest": None, "run_id": "run-a", "ok": True, "error": None,
             "run": {"status": "running", "outcome": None, "processes": head}},
            {"label": "node-1", "dest": "10.0.0.2", "run_id": "run-b", "ok": True, "error": None,
             "run": {"status": "running", "outcome": None, "processes": worker}},
            {"label": "node-22", "dest": "worker.example", "run_id": "run-c", "ok": False,
             "error": "ssh: connect to host worker.example port 22: Connection refused", "run": None}]
    monkeypatch.setattr(ssh, "load_cluster", lambda run=None: _cluster())
    monkeypatch.setattr(ssh, "cluster_status", lambda c: rows)
    assert nodes.status(argparse.Namespace(run=None, json=False)) == 1  # a node could not be asked
    lines = capsys.readouterr().out.splitlines()
    table = process_lines(head, logs="vllm-wizard logs run-a")
    assert lines[0] == "node-0  (this machine)  run run-a  running"
    assert lines[1:1 + len(table)] == table, "the same table as `status` prints for a run"
    assert lines[1].split() == ["vllm-head", "READY", "pid=4242", "ports=8000", "restarts=0"]
    assert lines[2].split() == ["router", "BACKOFF", "pid=-", "ports=-", "restarts=3"]
    assert lines[1].index("READY") == lines[2].index("BACKOFF"), "columns are aligned"
    assert lines[3] == "      cause: port 8000 is in use — fix: free it"
    assert lines[4] == "      log: /logs/router.log  (vllm-wizard logs run-a router)"
    assert lines[5] == "node-1  (10.0.0.2)  run run-b  running"
    assert lines[6].split() == ["vllm-worker-1", "STARTING", "pid=17", "ports=-", "restarts=1"]
    assert lines[7] == ("node-22  (worker.example)  run run-c: UNREACHABLE — "
                        "ssh: connect to host worker.example port 22: Connection refused")


def test_a_remote_nodes_log_hint_names_the_node(monkeypatch, capsys) -> None:
    import argparse

    from vllm_deploy_wizard.commands import nodes
    from vllm_deploy_wizard.launcher.engines import ssh

    proc = {"name": "vllm-worker-1", "state": "FATAL", "pid": None, "ports": [], "restarts": 6,
            "cause": {"summary": "out of memory"}, "log": "/logs/w.log"}
    rows = [{"label": "node-1", "dest": "10.0.0.2", "run_id": "run-b", "ok": True, "error": None,
             "run": {"status": "finished", "outcome": "fatal", "processes": [proc]}}]
    monkeypatch.setattr(ssh, "load_cluster", lambda run=None: _cluster())
    monkeypatch.setattr(ssh, "cluster_status", lambda c: rows)
    assert nodes.status(argparse.Namespace(run=None, json=False)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "node-1  (10.0.0.2)  run run-b  finished (fatal)"
    assert out[2:] == ["      cause: out of memory",
                       "      log: /logs/w.log  (vllm-wizard logs --node node-1 vllm-worker-1)"]


def test_stop_all_nodes_prints_one_aligned_row_per_node(monkeypatch, capsys) -> None:
    import argparse

    from vllm_deploy_wizard.commands import nodes
    from vllm_deploy_wizard.launcher.engines import ssh

    c = _cluster()
    monkeypatch.setattr(ssh, "load_cluster", lambda run=None: c)
    monkeypatch.setattr(ssh, "stop_cluster", lambda cl, timeout: [(c.nodes[0], 0, "run run-a stopped"),
                                                                   (c.nodes[1], 1, "no answer within 30 s"),
                                                                   (c.nodes[2], 0, "run run-c stopped")])
    assert nodes.stop(argparse.Namespace(run=None, timeout=15.0)) == 1
    lines = capsys.readouterr().out.splitlines()
    expected = [("node-0", "this machine", "stopped: run run-a stopped"),
                ("node-1", "10.0.0.2", "FAILED: no answer within 30 s"),
                ("node-22", "worker.example", "stopped: run run-c stopped")]
    assert len(lines) == 3
    for line, (label, dest, result) in zip(lines, expected, strict=True):
        assert line.startswith(f"{label} ") and f" {dest} " in line and line.endswith(result), line
    assert len({line.index(dest) for line, dest in zip(lines, ["this", "10.0.0.2", "worker"], strict=True)}) == 1
    assert len({line.index(word) for line, word in zip(lines, ["stopped:", "FAILED:", "stopped:"], strict=True)}) == 1


def test_launch_all_nodes_prints_the_started_nodes_as_a_table(tmp_path, monkeypatch, capsys) -> None:
    import argparse

    from vllm_deploy_wizard.commands import nodes
    from vllm_deploy_wizard.launcher.engines import ssh

    plan = _plan(tmp_path)
    monkeypatch.setattr(ssh, "launch_all_nodes", lambda *a, **k: _cluster())
    args = argparse.Namespace(node=None, values=[], plan=str(plan), host=[], ssh_config=None, ssh_option=[],
                              remote_wizard="vllm-wizard", skip_flag_check=False)
    assert nodes.launch(args, yaml.safe_load(plan.read_text())) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["node-0", "node-1", "node-22"]
    assert [line.rsplit(" ", 1)[1] for line in lines[:3]] == ["run-a", "run-b", "run-c"]
    assert len({line.index("run ") for line in lines[:3]}) == 1, "columns are aligned"
    assert "this machine" in lines[0] and "worker.example" in lines[2]
    assert lines[3] == "cluster of 3 nodes started; head run run-a"


def test_a_pd_plans_machine_addresses_come_from_their_hosts() -> None:
    """PD over --all-nodes: each pool's address is that machine's --host (resolved), this machine's is
    its own address, the router's is its machine's; a --set value wins and nothing else is added."""
    from vllm_deploy_wizard.commands.nodes import machine_addresses

    procs = [
        {"name": "prefill-0", "role": "prefill", "node": "prefill-node-0", "argv": ["x"],
         "env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": "$PREFILL_NODE_1"}},
        {"name": "decode-0", "role": "decode", "node": "decode-node-0", "argv": ["x"],
         "env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": "$DECODE_NODE_1"}},
        {"name": "router", "role": "router", "node": "router", "node_rank": None,
         "argv": ["vllm-router", "--prefill", "http://$PREFILL_NODE_1:8001", "--decode", "http://$DECODE_NODE_1:8002",
                  "--host", "$ROUTER_HOST"], "env": {}},
    ]
    data = {"plan": {"processes": procs}}
    hosts = {"decode-node-0": "root@127.0.0.3", "router": "127.0.0.1"}
    found = machine_addresses(data, "prefill-node-0", hosts, {}, here=lambda: "10.1.2.3")
    assert found == {"PREFILL_NODE_1": "10.1.2.3", "DECODE_NODE_1": "127.0.0.3", "ROUTER_HOST": "127.0.0.1"}
    given = {"DECODE_NODE_1": "192.168.9.9", "ROUTER_HOST": "10.1.2.3"}
    assert machine_addresses(data, "prefill-node-0", hosts, given, here=lambda: "10.1.2.3") == {
        "PREFILL_NODE_1": "10.1.2.3"}


def _answers(by_dest: dict):
    """A ``run(argv, timeout)`` answering each node's command from ``by_dest`` (dest or "local" →
    (exit status, stdout, stderr)); records the argv."""
    import subprocess

    calls: list[list[str]] = []

    def run(argv, timeout, stdin=None):
        calls.append(list(argv))
        dest = next((d for d in by_dest if d in argv), "?") if argv[0] == "ssh" else "local"
        code, out, err = by_dest[dest]
        return subprocess.CompletedProcess(argv, code, out.encode(), err.encode())

    run.calls = calls  # type: ignore[attr-defined]
    return run


def test_node_status_is_the_nodes_status_row_or_ssh_s_error() -> None:
    """The one ask of ``status --all-nodes`` and the wizard's monitor: ``status RUN --json`` on the node."""
    import json

    from vllm_deploy_wizard.launcher.engines.ssh import cluster_status, node_status

    c = _cluster()
    row = {"run_id": "run-b", "status": "running", "outcome": None,
           "processes": [{"name": "vllm-worker-1", "state": "READY", "pid": 17, "ports": [8001]}]}
    run = _answers({"local": (0, json.dumps([{**row, "run_id": "run-a"}]), ""),
                    "10.0.0.2": (0, json.dumps([row]), ""),
                    "worker.example": (255, "", "ssh: connect to host worker.example port 22: Connection refused\n")})
    got = node_status(c, c.nodes[1], run)
    assert got == {"label": "node-1", "dest": "10.0.0.2", "run_id": "run-b", "ok": True, "error": None, "run": row}
    assert shlex.split(run.calls[-1][-1])[-3:] == ["status", "run-b", "--json"]
    down = node_status(c, c.nodes[2], run)
    assert not down["ok"] and down["run"] is None
    assert down["error"] == "ssh: connect to host worker.example port 22: Connection refused"
    assert [r["label"] for r in cluster_status(c, run)] == ["node-0", "node-1", "node-22"]
    empty = node_status(c, c.nodes[1], _answers({"10.0.0.2": (0, "[]", "")}))
    assert not empty["ok"] and empty["error"] == "no run run-b recorded there"


def test_node_log_tail_runs_logs_there_and_names_the_node_on_failure() -> None:
    from vllm_deploy_wizard.launcher.engines.ssh import node_log_tail

    c = _cluster()
    run = _answers({"10.0.0.2": (0, "run run-b  running\n==> vllm-worker-1 (READY) <==\nhello\n", ""),
                    "worker.example": (255, "", "ssh: Could not resolve hostname worker.example\n")})
    assert node_log_tail(c, c.nodes[1], "vllm-worker-1", 20, run)[-1] == "hello"
    assert shlex.split(run.calls[-1][-1])[-5:] == ["logs", "run-b", "vllm-worker-1", "-n", "20"]
    with pytest.raises(LaunchError, match="node-22: ssh: Could not resolve hostname worker.example"):
        node_log_tail(c, c.nodes[2], "vllm-worker-1", 20, run)


def test_head_cluster_finds_the_cluster_a_run_heads_exactly(tmp_path) -> None:
    from vllm_deploy_wizard.launcher.engines.ssh import clusters_root, head_cluster, save_cluster

    save_cluster(_cluster())
    assert [n.label for n in head_cluster("run-a").nodes] == ["node-0", "node-1", "node-22"]
    assert head_cluster("run") is None, "a prefix is not the head run"
    assert head_cluster("run-b") is None, "a worker's run heads nothing here"
    (clusters_root() / "run-x.json").write_text("{not json")
    assert head_cluster("run-x") is None
