"""The plan's notes carry the constraints panel's §2.2 TP hint (one text, catalog/plan_notes.py
``single_node_tp_hint``), and ``--gpus`` above a fixed-count profile's devices per node is refused."""

from __future__ import annotations

from vllm_deploy_wizard.catalog import Selection, load_catalog, options
from vllm_deploy_wizard.catalog.planner import plan_selection

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
