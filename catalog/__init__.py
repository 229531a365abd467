"""vllm_deploy_wizard.catalog — taxonomy, strategies, recipes, loaders, plan synthesis, constraints.

Public API (docs/contracts.md §1)::

    cat = load_catalog()                  # bundled: seeds 000/001 + every recipe (facts only) + Mooncake
    cat = load_catalog(recipes=Path(d))   # exactly that checkout (--recipes)
    planned = plan_selection(cat, sel)    # the one planner: options, plan, refusals, warnings
    plan = synthesize(cat, Selection(model="Qwen/Qwen3-32B", hardware="h200"))
    plan_to_json(plan)                    # docs/plan-file.md §3 (+ contract extras)
    options(cat, sel)                     # every axis with state and reason (constraints/)
"""

from __future__ import annotations

from .constraints import options
from .loader import Catalog, load_catalog
from .plan import LaunchPlan, PlanProcess, plan_to_json
from .selection import Selection, load_selection
from .synthesis import synthesize

__all__ = [
    "Catalog",
    "LaunchPlan",
    "PlanProcess",
    "Selection",
    "load_catalog",
    "load_selection",
    "options",
    "plan_to_json",
    "synthesize",
]
