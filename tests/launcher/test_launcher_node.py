"""Selecting one machine of a plan: ``node`` labels (contracts §2) vs ``node_rank``.

PD prefill-0 and decode-0 both have node_rank 0 but run on different machines; the plan's per-process
``node`` label tells them apart, and ``--node LABEL`` picks one.
"""

from __future__ import annotations

import pytest
import yaml

from vllm_deploy_wizard.cli import main
from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.launcher.plan_file import load_plan_file, parse_plan


def _proc(name, role, rank, node, deps=()):
    return {"name": name, "role": role, "node_rank": rank, "node": node, "argv": ["/bin/true", name],
            "env": {}, "depends_on": list(deps), "ports": [], "health": None}


PD = {"plan_version": 1, "plan": {"placeholders": [], "processes": [
    _proc("prefill-0", "prefill", 0, "prefill-node-0"),
    _proc("decode-0", "decode", 0, "decode-node-0"),
    _proc("decode-1", "decode", 1, "decode-node-1"),
    _proc("router", "router", None, "router", deps=["prefill-0", "decode-0"]),
]}}


def test_node_label_selects_exactly_that_machine() -> None:
    spec = parse_plan(PD, node="decode-node-0")
    assert [p.name for p in spec.processes] == ["decode-0"] and spec.node == "decode-node-0"
    router = parse_plan(PD, node="router")
    assert [p.name for p in router.processes] == ["router"]
    assert router.processes[0].depends_on == ()  # its workers run on other machines


def test_node_rank_alone_is_refused_when_it_names_several_machines() -> None:
    with pytest.raises(LaunchError) as exc:
        parse_plan(PD, source="pd.yaml", node_rank=0)
    msg = str(exc.value)
    assert "node_rank 0 is on 2 machines" in msg and "pick one with --node LABEL" in msg
    assert "prefill-node-0, decode-node-0, decode-node-1, router" in msg
    assert [p.name for p in parse_plan(PD, node_rank=1).processes] == ["decode-1"]  # one machine: fine


def test_unknown_node_label_lists_the_labels() -> None:
    with pytest.raises(LaunchError, match=r"no process on node 'decode-node-3' \(did you mean 'decode-node-\d'\?\)\."
                                          r" The plan's nodes: prefill-node-0, decode-node-0, decode-node-1, router"):
        parse_plan(PD, source="pd.yaml", node="decode-node-3")


def test_plans_without_node_labels_select_by_rank_label(tmp_path) -> None:
    old = {"plan_version": 1, "plan": {"processes": [
        {k: v for k, v in _proc(n, "serve", r, None).items() if k != "node"} for n, r in (("head", 0), ("worker", 1))]}}
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump(old))
    assert [p.name for p in load_plan_file(f, node="node-1").processes] == ["worker"]
    assert [p.name for p in load_plan_file(f, node_rank=0).processes] == ["head"]


def test_launch_cli_node_flag(tmp_path, capsys) -> None:
    f = tmp_path / "pd.yaml"
    f.write_text(yaml.safe_dump(PD))
    assert main(["launch", str(f), "--skip-flag-check"]) == 2
    assert "pick one with --node LABEL" in capsys.readouterr().err
    assert main(["launch", str(f), "--node", "prefil-node-0", "--skip-flag-check"]) == 2
    assert "(did you mean 'prefill-node-0'?)" in capsys.readouterr().err
