"""A launch refused for a hardware mismatch (an accelerator plan on a node without accelerators) names
what to do in the front end that asked (launcher/launch.py ``MISMATCH_FIXES``): ``--force`` on the
command line, re-planning for this node in the wizard, which has no force action."""

from __future__ import annotations

import yaml

from vllm_deploy_wizard.launcher.launch import MISMATCH_FIXES, NodeFacts, prepare
from vllm_deploy_wizard.tui.launch_port import RealLauncher


def _plan(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({"plan_version": 1, "plan": {"accelerator": "cuda", "processes": [
        {"name": "vllm", "role": "serve", "argv": ["vllm", "serve", "m"]}]}}))
    return path


def _mismatch(problems):
    return next(p for p in problems if "a cuda plan on a node without accelerators" in p)


def test_the_wizard_is_told_to_plan_for_this_node_not_to_pass_force(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no vLLM: the flag probe is skipped
    launcher = RealLauncher()
    launcher.facts = NodeFacts()
    text = _mismatch(launcher.preflight(_plan(tmp_path), {}))
    assert text.endswith(MISMATCH_FIXES["tui"]) and "or launch with --force" not in text
    assert "hardware step" in text
    cli = _mismatch(prepare(_plan(tmp_path), facts=NodeFacts(), check_flags=False).problems)
    assert cli.endswith("or launch with --force")
