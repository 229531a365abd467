"""vllm_wizard.catalog — taxonomy, strategies, recipes, loaders, plan synthesis, constraints.

Public API (docs/contracts.md §1)::

    cat = load_catalog()                  # bundled: seeds 000/001 + curated recipes + Mooncake
    cat = load_catalog(recipes=Path(d))   # a recipes checkout replaces the bundled catalog
    plan = synthesize(cat, Selection(model="Qwen/Qwen3-32B", hardware="h200"))
    plan_to_json(plan)                    # shared/spec/plan-json.md §3 (+ contract extras)
"""

from __future__ import annotations

from .loader import Catalog, load_catalog
from .plan import LaunchPlan, PlanProcess, plan_to_json
from .selection import Selection, load_selection

try:  # synthesis lands after the models/loader; keep the package importable meanwhile
    from .synthesis import synthesize
except ModuleNotFoundError as exc:  # pragma: no cover - transitional
    if exc.name != f"{__name__}.synthesis":
        raise

try:  # constraints/options are teammate B's module
    from .constraints import options
except ModuleNotFoundError as exc:  # pragma: no cover - until B's module exists
    if exc.name != f"{__name__}.constraints":
        raise

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
