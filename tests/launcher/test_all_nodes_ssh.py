"""``launch --all-nodes`` without a network: what it refuses before touching any machine, and an
unreachable node named with ssh's own error (ssh made to fail at once with a ProxyCommand)."""

from __future__ import annotations

import shlex

import pytest
import yaml

from vllm_deploy_wizard.cli import main
from vllm_deploy_wizard.errors import LaunchError
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
