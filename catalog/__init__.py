"""vllm_deploy_wizard.catalog — taxonomy, strategies, recipes, loaders, plan synthesis, constraints.

Public API (docs/contracts.md §1)::

    cat = load_catalog()                  # bundled: seeds 000/001 + every recipe (facts only) + Mooncake
    cat = load_catalog(recipes=Path(d))   # exactly that checkout (--recipes)
    planned = plan_selection(cat, sel)    # the one planner: options, plan, refusals, warnings
    plan = synthesize(cat, Selection(model="Qwen/Qwen3-32B", hardware="h200"))
    plan_to_json(plan)                    # docs/plan-file.md §3 (+ contract extras)
    options(cat, sel)                     # every axis with state and reason (constraints/)

The names below are imported on first use (PEP 562 ``__getattr__``), not with the package: loading
a catalog (``catalog.loader``) then does not import the constraints, synthesis and plan models
(~55 ms of CPU), which the wizard's first screen — the hardware list — does not need (issue #21).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .constraints import options
    from .loader import Catalog, load_catalog
    from .plan import LaunchPlan, PlanProcess, plan_to_json
    from .selection import Selection, load_selection
    from .synthesis import synthesize

#: Public name → the submodule defining it.
_HOMES = {
    "Catalog": "loader",
    "LaunchPlan": "plan",
    "PlanProcess": "plan",
    "Selection": "selection",
    "load_catalog": "loader",
    "load_selection": "selection",
    "options": "constraints",
    "plan_to_json": "plan",
    "synthesize": "synthesis",
}

__all__ = ["Catalog", "LaunchPlan", "PlanProcess", "Selection", "load_catalog", "load_selection", "options",
           "plan_to_json", "synthesize"]


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its submodule on first use (then cached here)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
