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


def _colocated_minimax(**update) -> Selection:
    from vllm_deploy_wizard.catalog.selection import PdPool, PdSelection

    pools = PdSelection(prefill=PdPool(nodes=0, mode="tp"), decode=PdPool(nodes=0, mode="tp"))
    return Selection(model="MiniMaxAI/MiniMax-M2", hardware="h200", strategy="pd_cluster", pd=pools, **update)


def test_colocated_pools_are_added_together_on_their_node() -> None:
    """You should see the two co-located engines of node-0 summed: prefill TP 4 on its pinned half and
    decode TP 8 each pass vLLM's per-process check on an 8-device node, but need 12 devices together."""
    from vllm_deploy_wizard.catalog.planner import node_overflow

    cat = load_catalog()
    planned = plan_selection(cat, _colocated_minimax())
    h200 = cat.taxonomy.hardware_profiles["h200"]
    assert node_overflow(h200, planned.plan, None) == []  # the planner's own co-located plan fits
    decode = next(p for p in planned.plan.processes if p.role == "decode")
    decode.argv[decode.argv.index("--tensor-parallel-size") + 1] = "8"
    from vllm_deploy_wizard.catalog.planner import rank_overflow

    assert rank_overflow(h200, planned.plan, None) == []  # per process, TP 8 ≤ 8: not caught
    [(node, names, reason)] = node_overflow(h200, planned.plan, None)
    assert (node, names) == ("node-0", "prefill-0 + decode-0")
    assert reason.startswith("prefill-0 uses 4 (CUDA_VISIBLE_DEVICES=0,1,2,3), decode-0 uses 8 "
                             "(--tensor-parallel-size 8; CUDA_VISIBLE_DEVICES pins 4): 12 devices together on "
                             "node-0, above its 8 devices per node (the profile's gpu_count)"), reason
    assert "Fits: at most 8 together" in reason and "--pd-prefill 1 --pd-decode 1" in reason
    assert node_overflow(h200, planned.plan, 16) == []  # --gpus 16: 12 fit


def test_the_wizards_colocated_plan_warns_for_the_node() -> None:
    """You should see a warning naming node-0 when TP 8 is asked of both co-located pools (the wizard's
    non-strict plan; each pool is pinned to 4 of the 8 devices)."""
    planned = plan_selection(load_catalog(), _colocated_minimax(advanced_args=["--tensor-parallel-size=8"]),
                             strict=False)
    [warning] = [w for w in planned.warnings if w.startswith("warning: node-0 (prefill-0 + decode-0): ")]
    assert "16 devices together on node-0, above its 8 devices per node" in warning
    assert warning in planned.plan.notes


def test_a_node_that_n6_refuses_is_not_refused_twice() -> None:
    """You should see only N6's line for co-located DEP pools (each sized to the whole node): the
    machine's total names the same problem."""
    from vllm_deploy_wizard.catalog.planner import PlanRefused

    sel = Selection(model="deepseek-ai/DeepSeek-V4-Flash", hardware="h100", strategy="pd_cluster", nodes=1)
    with pytest.raises(PlanRefused) as refused:
        plan_selection(load_catalog(), sel)
    keys = [r.key for r in refused.value.refusals]
    assert "nodes" in keys and "processes" not in keys, keys


def test_a_node_too_small_for_one_device_each_offers_only_nodes_of_their_own() -> None:
    """You should see no "0 devices each" on a 1-device node: only a node per pool fits."""
    from vllm_deploy_wizard.catalog.selection import PdPool, PdSelection

    pools = PdSelection(prefill=PdPool(nodes=0, mode="tp"), decode=PdPool(nodes=0, mode="tp"))
    sel = Selection(model="Qwen/Qwen3-32B", hardware="dgx_spark_gb10", strategy="pd_cluster", pd=pools,
                    allow_unverified=True)
    [warning] = [w for w in plan_selection(load_catalog(), sel, strict=False).warnings if "together on node-0" in w]
    assert warning.endswith("Fits: at most 1 together — give each pool a node of its own "
                            "(--pd-prefill 1 --pd-decode 1)"), warning
