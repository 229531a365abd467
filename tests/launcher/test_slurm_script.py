"""``plan … --slurm FILE``: the sbatch script (docs/multi-node.md §4) — its lines, valid bash, and the
per-task command each node runs (executed with a stand-in wizard)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from vllm_deploy_wizard.cli import main

RECIPES = Path(__file__).resolve().parents[3] / "shared" / "recipes-snapshot"
#: The scripts are planned from ../shared's recipes snapshot: the ``shared`` fixture skips every test
#: (counted in the summary) where it is missing.
pytestmark = pytest.mark.usefixtures("shared")


def _script(tmp_path, *args) -> tuple[str, Path]:
    script = tmp_path / "job.sbatch"
    assert main(["plan", "--recipes", str(RECIPES), *args, "--slurm", str(script)]) == 0
    return script.read_text(), script


def _task(text: str) -> str:
    """The ``bash -c`` text srun runs on every node."""
    last = text.rstrip().splitlines()[-1]
    words = shlex.split(last)
    assert words[0] == "bash" and words[1] == "-c"
    return words[2]


def test_multi_node_script_runs_one_task_per_node(tmp_path) -> None:
    text, script = _script(tmp_path, "--model", "ByteDance-Seed/Seed-OSS-36B-Instruct", "--hardware", "b200",
                           "--strategy", "multi_node_tp", "--nodes", "3")
    assert "#SBATCH --nodes=3" in text and "#SBATCH --ntasks-per-node=1" in text
    assert "srun --nodes=3 --ntasks=3 --ntasks-per-node=1 --kill-on-bad-exit=1" in text
    assert script.stat().st_mode & 0o777 == 0o700
    plan = script.with_name("job.sbatch.plan.yaml")
    assert yaml.safe_load(plan.read_text())["plan"]["processes"][0]["name"] == "vllm-head"
    assert plan.stat().st_mode & 0o777 == 0o600  # the plan holds what was typed, API keys included
    assert f"export WIZARD_PLAN={plan}" in text
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    out = subprocess.run(["bash", "-c", _task(text)], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "SLURM_NODEID": "2", "WIZARD_BIN": "echo",
                              "WIZARD_PLAN": "/shared/plan.yaml", "HEAD_IP": "10.1.0.5"})
    assert out.stdout.split() == ["launch", "/shared/plan.yaml", "--node", "node-2", "--foreground",
                                  "--set", "HEAD_IP=10.1.0.5"]


def test_pd_labels_are_mapped_from_the_node_id(tmp_path) -> None:
    text, _ = _script(tmp_path, "--model", "Qwen/Qwen3-Coder-480B-A35B-Instruct", "--hardware", "h200",
                      "--strategy", "pd_cluster", "--pd-prefill", "2", "--pd-decode", "2")
    labels = ["prefill-node-0", "prefill-node-1", "decode-node-0", "decode-node-1", "router"]
    assert f"export WIZARD_NODES='{' '.join(labels)}'" in text and "#SBATCH --nodes=5" in text
    for k, label in enumerate(labels):
        out = subprocess.run(["bash", "-c", _task(text)], capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin", "SLURM_NODEID": str(k), "WIZARD_BIN": "echo",
                                  "WIZARD_PLAN": "p.yaml", "HEAD_IP": "h", "WIZARD_NODES": " ".join(labels)})
        assert out.stdout.split()[3] == label


def test_out_is_the_plan_the_nodes_read(tmp_path) -> None:
    out = tmp_path / "shared" / "plan.yaml"
    text, script = _script(tmp_path, "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--out", str(out))
    assert f"export WIZARD_PLAN={out.resolve()}" in text and "#SBATCH --nodes=1" in text
    assert not script.with_name("job.sbatch.plan.yaml").exists()


def test_slurm_into_a_folder_is_refused(tmp_path, capsys) -> None:
    assert main(["plan", "--recipes", str(RECIPES), "--model", "Qwen/Qwen3-32B", "--slurm", str(tmp_path)]) == 2
    assert "--slurm" in capsys.readouterr().err
