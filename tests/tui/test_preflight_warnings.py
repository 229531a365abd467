"""The wizard's preflight passes on what preflight only warns about (an abbreviated vLLM flag)."""

from __future__ import annotations

from pathlib import Path

import yaml

from vllm_deploy_wizard.tui.launch_port import RealLauncher

#: A ``vllm`` that answers ``--version`` and ``serve --help=all`` like vLLM does (a version no real
#: install has, so the per-version flag cache of other tests is never shared).
FAKE = """#!/bin/sh
if [ "$1" = "--version" ]; then echo 0.99.0+wizardtest; exit 0; fi
printf 'options:\\n  --max-num-seqs N\\n  --max-model-len N\\n  --port PORT\\n'
for i in $(seq 1 30); do echo "  --other-flag-$i X"; done
"""


def test_real_launcher_preflight_keeps_warnings_apart_from_problems(tmp_path: Path) -> None:
    exe = tmp_path / "vllm"
    exe.write_text(FAKE)
    exe.chmod(0o755)
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({"plan_version": 1, "plan": {"processes": [
        {"name": "vllm", "argv": [str(exe), "serve", "m", "--max-num-seq", "4"], "ports": []}]}}))
    launcher = RealLauncher()
    assert launcher.preflight(plan, {}) == []
    assert launcher.last_warnings == [
        "'vllm': vLLM expands --max-num-seq to --max-num-seqs; write it in full (a later vLLM may add another "
        "flag starting with --max-num-seq)"]
    plan.write_text(plan.read_text().replace("--max-num-seq", "--max-nmu-seqs"))
    problems = launcher.preflight(plan, {})
    assert len(problems) == 1 and "did you mean '--max-num-seqs'" in problems[0] and launcher.last_warnings == []
