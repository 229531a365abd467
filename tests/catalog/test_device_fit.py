"""The planner offers only shapes whose engines fit their node (docs/synthesis.md §2.15,
docs/constraints.md §3.2 S7, N6) while synthesis keeps the reference builder's text, and it plans
the node count its option rows resolve (docs/synthesis.md §2.14)."""

from __future__ import annotations

import pytest

from vllm_deploy_wizard.catalog import Selection, load_catalog, options, synthesize
from vllm_deploy_wizard.catalog.device_fit import engine_shortfall
from vllm_deploy_wizard.catalog.planner import PlanRefused, plan_selection
from vllm_deploy_wizard.common.flags import last_flag_value
from vllm_deploy_wizard.common.parallelism import devices_on_node

CAT = load_catalog()


def _serve(plan, name: str):
    return next(p for p in plan.processes if p.name == name)


def test_dep_that_keeps_the_recipes_tp_is_rendered_but_not_offered():
    sel = Selection(model="MiniMaxAI/MiniMax-M2", hardware="mi300x", strategy="single_node_dep")
    argv = _serve(synthesize(CAT, sel), "vllm").argv  # the reference text: TP 2 × DP 8
    assert devices_on_node(argv) == 16
    c = options(CAT, sel).choice("strategy", "single_node_dep")
    assert c.state == "disabled" and "needs 16 devices per node" in c.reason and "a node has 8" in c.reason
    with pytest.raises(PlanRefused, match="--strategy single_node_dep: .*needs 16 devices"):
        plan_selection(CAT, sel)
    # the same strategy on H200 (DP 8 alone) stays offered
    assert options(CAT, sel.model_copy(update={"hardware": "h200"})).choice("strategy", "single_node_dep").available


@pytest.mark.parametrize("model, need", [("inclusionAI/Ling-2.6-1T", 64), ("MiniMaxAI/MiniMax-M2", None)])
def test_multi_node_dep_fits_tp_times_local_dp_per_node(model, need):
    sel = Selection(model=model, hardware="h200", strategy="multi_node_dep", nodes=2)
    c = options(CAT, sel).choice("strategy", "multi_node_dep")
    if need is None:
        assert c.available and engine_shortfall(CAT, sel) is None
    else:
        assert c.state == "disabled" and f"needs {need} devices per node" in c.reason


def test_co_located_dep_pools_disable_one_node_and_tp_pools_keep_it():
    kimi = Selection(model="moonshotai/Kimi-K2.5", hardware="h200", strategy="pd_cluster", nodes=1)
    one = options(CAT, kimi).choice("nodes", "1")
    assert one.state == "disabled" and "4 for prefill" in one.reason and "needs 8" in one.reason
    assert one.reason.endswith("Or pick TP or TEP pools.")
    assert options(CAT, kimi).choice("nodes", "2").available
    # TP pools on the halves: Kimi-K2.5's 714 GB does not fit half an H200 node (564 GB) ...
    tp_modes = {"prefill": {"mode": "tp"}, "decode": {"mode": "tp"}}
    kimi_tp = Selection(**kimi.model_dump(exclude_defaults=True), pd=tp_modes)
    assert "can't fit this variant (714GB > 564GB)" in options(CAT, kimi_tp).choice("nodes", "1").reason
    # ... MiniMax-M2's 276 GB does (the golden's MiniMax-M2 h200 n1 shape): one node stays offered
    tp = kimi_tp.model_copy(update={"model": "MiniMaxAI/MiniMax-M2"})
    assert options(CAT, tp).choice("nodes", "1").available
    planned = plan_selection(CAT, tp)
    for name in ("prefill-0", "decode-0"):
        proc = _serve(planned.plan, name)
        assert devices_on_node(proc.argv) == len(proc.env["CUDA_VISIBLE_DEVICES"].split(",")) == 4


def test_plan_without_nodes_uses_the_count_the_rows_resolve():
    sel = Selection(model="MiniMaxAI/MiniMax-M2", hardware="h200", strategy="multi_node_dep")
    assert options(CAT, sel).resolved["nodes"] == 2
    planned = plan_selection(CAT, sel)
    assert planned.selection.nodes == 2
    head = _serve(planned.plan, "vllm-head")
    assert last_flag_value(head.argv, "--data-parallel-size-local") == "8"
    assert last_flag_value(head.argv, "--data-parallel-size") == "16"
    # synthesis alone (the reference builder's view) keeps its 1-node default
    assert synthesize(CAT, sel).processes[0].name == "vllm"


def test_plan_without_nodes_skips_a_disabled_node_count():
    sel = Selection(model="moonshotai/Kimi-K2.5", hardware="h200", strategy="pd_cluster")
    planned = plan_selection(CAT, sel)
    assert planned.selection.nodes == 2 and planned.refusals == []
    for name in ("prefill-0", "decode-0"):
        proc = _serve(planned.plan, name)
        assert devices_on_node(proc.argv) == 8 and proc.env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"


def test_cpu_backends_are_exempt():
    sel = Selection(model="meta-llama/Llama-3.3-70B-Instruct", hardware="xeon6", gpus=1, strategy="single_node_tp")
    assert devices_on_node(synthesize(CAT, sel).processes[-1].argv) > 1
    assert engine_shortfall(CAT, sel) is None


def test_the_persons_own_parallel_size_counts():
    """An advanced ``--tensor-parallel-size 1`` (last wins in the plan) makes MiniMax-M2's DEP fit
    MI300X (DP 8 × TP 1): the strategy is offered and planned with that size."""
    sel = Selection(model="MiniMaxAI/MiniMax-M2", hardware="mi300x", strategy="single_node_dep",
                    advanced_args=["--tensor-parallel-size", "1"])
    assert options(CAT, sel).choice("strategy", "single_node_dep").available
    assert devices_on_node(_serve(plan_selection(CAT, sel).plan, "vllm").argv) == 8


@pytest.mark.parametrize("install_mode, clash", [("pip", True), ("docker", False)])
def test_co_located_pools_with_dp_above_one_clash_on_side_channels_outside_docker(install_mode, clash):
    """TP 2 × DP 2 fits each half of an H200 node, but the pools' NIXL bases 5557/5558 are one
    apart: DP 2 binds base and base + 1 (vLLM 0.32), so prefill's second listener is decode's first.
    In docker each container has its own ports."""
    sel = Selection(model="MiniMaxAI/MiniMax-M2", hardware="h200", strategy="pd_cluster", nodes=1,
                    install_mode=install_mode,
                    advanced_args=["--tensor-parallel-size", "2", "--data-parallel-size", "2"])
    envs = [p.env for p in synthesize(CAT, sel).processes if p.role in ("prefill", "decode")]
    assert [int(e["VLLM_NIXL_SIDE_CHANNEL_PORT"]) for e in envs] == [5557, 5558]
    why = engine_shortfall(CAT, sel)
    assert (why is not None and "side-channel" in why and "DP 2" in why) if clash else why is None
    assert options(CAT, sel).choice("nodes", "1").available is not clash
