"""``launch`` of an IAXL KVShrink plan checks the host first and lists every gap at once; the plan
text and node scripts export the env setvars.sh reads before sourcing it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from children import run_cli

from vllm_deploy_wizard import __version__
from vllm_deploy_wizard.catalog import Selection, load_catalog, synthesize
from vllm_deploy_wizard.catalog.models import Recipe
from vllm_deploy_wizard.catalog.render import node_scripts, plan_file, plan_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "catalog"))
from test_synthesis_seed import MOE_ID, MOE_RECIPE  # tests/catalog, on sys.path from the line above


def _iaxl_plan():
    cat = load_catalog().with_recipe(Recipe.model_validate(MOE_RECIPE))
    return synthesize(cat, Selection(model=MOE_ID, hardware="xeon6", strategy="single_node_tp", features="none",
                                     kv_offload="iaxl"))


def test_setup_prelude_runs_after_the_env_it_reads() -> None:
    plan = _iaxl_plan()
    text = plan_text(plan)
    assert text.index("export TP_SIZE=1") < text.index("source setvars.sh")
    assert text.index("export DEVICE=cpu") < text.index("source setvars.sh")
    [script] = node_scripts(plan).values()
    assert script.index("export TP_SIZE=1") < script.index("source setvars.sh") < script.index("exec vllm")


def test_launch_lists_every_iaxl_host_gap_before_starting(env, tmp_path) -> None:
    """This test machine has none of IAXL's host setup: no IOMMU words, no QAT, no qat config or
    service, no checkout — all five are named in one refusal, and nothing is started."""
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_file(_iaxl_plan(), {"selection": {}}, __version__)))
    env = dict(env, HOME=str(tmp_path / "home"))
    r = run_cli(env, "launch", str(path), "--skip-flag-check")
    assert r.returncode == 2, r.stderr
    assert "not ready for IAXL KVShrink (5 gap(s)" in r.stderr, r.stderr
    for what in ("intel_iommu=on,sm_on iommu=pt", "QAT devices: TP_SIZE=1 needs 1", "POLICY=0", "qat service",
                 f"{tmp_path}/home/intel-accel-for-llm/setvars.sh"):
        assert what in r.stderr, (what, r.stderr)
    assert "sudo ./tools/setup_kernel_cmdline.sh" in r.stderr  # a step to run, shown, never run
    assert not (tmp_path / "state" / "vllm-wizard" / "runs").exists() or not any(
        (tmp_path / "state" / "vllm-wizard" / "runs").iterdir())
