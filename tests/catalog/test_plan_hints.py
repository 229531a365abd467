"""The plan's notes carry the constraints panel's §2.2 TP hint (one text, catalog/plan_notes.py
``single_node_tp_hint``), and ``--gpus`` above a fixed-count profile's devices per node is refused."""

from __future__ import annotations

import pytest

from vllm_deploy_wizard.catalog import Selection, load_catalog, options
from vllm_deploy_wizard.catalog.hostfit import HostCapacity
from vllm_deploy_wizard.catalog.planner import PlanRefused, plan_selection

CAT = load_catalog()
HINT = "This recipe runs on 1 of 4 GPUs on the selected node — add --tensor-parallel-size N via Advanced to scale up."


def test_the_plan_says_what_the_constraints_panel_says_about_tp():
    sel = Selection(model="Qwen/Qwen3-32B", hardware="h200", gpus=4)
    assert HINT in options(CAT, sel).warnings
    assert HINT in plan_selection(CAT, sel).plan.notes


def test_a_tp_given_in_the_advanced_args_silences_the_hint_in_both():
    sel = Selection(model="Qwen/Qwen3-32B", hardware="h200", gpus=4, advanced_args=["--tensor-parallel-size=4"])
    assert not any(w.startswith("This recipe runs on") for w in options(CAT, sel).warnings)
    assert not any(n.startswith("This recipe runs on") for n in plan_selection(CAT, sel).plan.notes)


def test_gpus_above_a_fixed_count_profile_node_are_refused_naming_the_flag():
    with pytest.raises(PlanRefused, match=r"--gpus 1000: H200 has 8 devices per node .*Valid: --gpus 1 to 8; "
                                          r"more devices = more nodes"):
        plan_selection(CAT, Selection(model="Qwen/Qwen3-32B", hardware="h200", gpus=1000))
    assert plan_selection(CAT, Selection(model="Qwen/Qwen3-32B", hardware="h200", gpus=8)).refusals == []


@pytest.mark.parametrize("model, hardware, gpus", [("Qwen/Qwen3-32B", "mi300x", 64),  # CPX partitions
                                                ("meta-llama/Llama-3.1-8B-Instruct", "xeon6", 8)])  # NUMA nodes
def test_gpus_above_the_profile_stay_a_warning_where_vllm_may_see_more_devices(model, hardware, gpus):
    plan = plan_selection(CAT, Selection(model=model, hardware=hardware, gpus=gpus)).plan
    assert any(f"devices per node; planning for {gpus}" in n for n in plan.notes)


def test_on_the_detected_node_the_count_seen_there_wins():
    planned = plan_selection(CAT, Selection(model="Qwen/Qwen3-32B", hardware="h200", gpus=16), HostCapacity())
    assert any("planning for 16" in n for n in planned.plan.notes)
