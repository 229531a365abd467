"""PD pool sizes the person gives (``--pd-prefill``/``--pd-decode N``, ``pd.<role>.nodes``) are refused
when the pool can't hold the variant (docs/constraints.md §3.2 N6): a co-located pool (0) gets half
a node, a sized pool its nodes' devices, and each must reach the variant's ``vram_minimum_gb``."""

from __future__ import annotations

import pytest

from vllm_deploy_wizard.catalog import Selection, load_catalog, options
from vllm_deploy_wizard.catalog.planner import PlanRefused, plan_selection

CAT = load_catalog()
DSV3 = dict(model="deepseek-ai/DeepSeek-V3", strategy="pd_cluster")


def _pools(prefill: int, decode: int) -> dict:
    return {"prefill": {"nodes": prefill}, "decode": {"nodes": decode}}


def test_co_located_pools_that_cannot_hold_the_weights_are_refused_with_the_flags():
    sel = Selection(**DSV3, hardware="h200", pd=_pools(0, 0))
    with pytest.raises(PlanRefused) as err:
        plan_selection(CAT, sel)
    text = str(err.value)
    for role in ("prefill", "decode"):
        assert f"--pd-{role} 0: co-located pools split the node's 8 devices (4 for {role})" in text
        assert f"Valid: --pd-{role} 1 or more" in text
    assert "805GB > 564GB" in text
    # the default landing skips the co-located node count (N6) and plans one node per pool
    planned = plan_selection(CAT, Selection(**DSV3, hardware="h200"))
    assert planned.selection.nodes == 2 and planned.refusals == []


def test_a_sized_pool_short_of_the_weights_is_refused():
    sel = Selection(**DSV3, hardware="h100", pd=_pools(1, 2))
    with pytest.raises(PlanRefused) as err:
        plan_selection(CAT, sel)
    text = str(err.value)
    assert "--pd-prefill 1: the prefill pool's 1 node can't fit this variant (805GB > 640GB)" in text
    assert "Valid: --pd-prefill 2 or more" in text and "--pd-decode" not in text
    assert options(CAT, sel).pd_sizes.keys() == {"prefill"}
    assert plan_selection(CAT, Selection(**DSV3, hardware="h100", pd=_pools(2, 2))).refusals == []


def test_half_co_located_mix_refuses_the_pool_that_does_not_fit():
    sel = Selection(**DSV3, hardware="h200", pd=_pools(3, 0))
    with pytest.raises(PlanRefused) as err:
        plan_selection(CAT, sel)
    assert "--pd-decode 0:" in str(err.value) and "--pd-prefill" not in str(err.value)


def test_pools_that_fit_stay_planned_and_lenient_plans_are_not_refused():
    small = Selection(model="MiniMaxAI/MiniMax-M2", hardware="h200", strategy="pd_cluster", pd=_pools(0, 0))
    assert options(CAT, small).pd_sizes == {}
    plan_selection(CAT, small)
    loose = plan_selection(CAT, Selection(**DSV3, hardware="h200", pd=_pools(0, 0)), strict=False)
    assert loose.plan.processes


def test_a_pool_co_located_beside_sized_nodes_is_explained():
    sel = Selection(model="MiniMaxAI/MiniMax-M2", hardware="h200", strategy="pd_cluster", pd=_pools(1, 0))
    plan = plan_selection(CAT, sel).plan
    note = next(n for n in plan.notes if n.startswith("the decode pool is co-located"))
    assert "(--pd-decode 0)" in note and "$DECODE_NODE_1 is its address" in note
    assert "CUDA_VISIBLE_DEVICES=4,5,6,7" in note and "--pd-decode 1 gives the pool the whole node" in note
    assert "DECODE_NODE_1" in plan.placeholders  # the address the router and NIXL side channel use
    both = plan_selection(CAT, sel.model_copy(update={"pd": None})).plan  # co-located together: no note
    assert not any("co-located (--pd-" in n for n in both.notes)
