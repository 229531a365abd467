"""A serve process whose TP × PP × DP on its node is above the devices per node (``--gpus`` or the
profile's count) is refused by ``plan`` naming the flag, the value and the devices per node, and is a
warning in the wizard's (non-strict) plan; TP spread over ``--nodes`` counts per node."""

from __future__ import annotations

import pytest

from vllm_deploy_wizard.catalog import Selection, load_catalog
from vllm_deploy_wizard.catalog.planner import plan_selection
from vllm_deploy_wizard.cli import main


def _plan(capsys, *flags: str) -> tuple[int, str]:
    code = main(["plan", "--model", "Qwen/Qwen3-32B", "--hardware", "h200", *flags])
    _, err = capsys.readouterr()
    return code, err


@pytest.mark.parametrize(("flags", "value", "count", "source"), [
    (["--arg=--tensor-parallel-size=16"], "16", 8, "the profile's gpu_count"),
    (["--gpus", "2", "--arg=--tensor-parallel-size=8"], "8", 2, "--gpus 2"),
])
def test_tp_above_the_devices_per_node_is_refused(capsys, flags: list[str], value: str, count: int,
                                                  source: str) -> None:
    code, err = _plan(capsys, *flags)
    assert code == 2, err
    line = next(ln for ln in err.splitlines() if ln.strip().startswith("--tensor-parallel-size"))
    assert f"--tensor-parallel-size {value}: needs {value} devices per node" in line
    assert f"above the {count} devices per node ({source})" in line


def test_tp_times_pp_is_counted(capsys) -> None:
    code, err = _plan(capsys, "--arg=--tensor-parallel-size=4", "--arg=--pipeline-parallel-size=4")
    assert code == 2, err
    assert "--tensor-parallel-size 4 × --pipeline-parallel-size 4 needs 16 devices per node" in err


def test_tp_over_nodes_is_counted_per_node(capsys) -> None:
    code, err = _plan(capsys, "--strategy", "multi_node_tp", "--nodes", "2")
    assert code == 0, err  # TP 16 over 2 nodes of 8
    code, err = _plan(capsys, "--strategy", "multi_node_tp", "--nodes", "2", "--arg=--tensor-parallel-size=32")
    assert code == 2, err
    assert "--tensor-parallel-size 32: --tensor-parallel-size 32 over --nnodes 2 needs 16 devices per node" in err


def test_tp_that_fits_is_planned(capsys) -> None:
    code, err = _plan(capsys, "--gpus", "2", "--arg=--tensor-parallel-size=2")
    assert code == 0, err
    assert "devices per node, above" not in err


def test_the_wizards_plan_warns() -> None:
    sel = Selection(model="Qwen/Qwen3-32B", hardware="h200", gpus=2, advanced_args=["--tensor-parallel-size=8"])
    planned = plan_selection(load_catalog(), sel, strict=False)
    assert any(w.startswith("warning: --tensor-parallel-size 8: needs 8 devices per node, above the 2")
               for w in planned.warnings), planned.warnings
    assert any("needs 8 devices per node" in n for n in planned.plan.notes)
