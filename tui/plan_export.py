"""Exports from the review screen: the plan file (contracts §2) and one bash script per node.

Both are the catalog renderer's (``catalog/render.py``: ``plan_file``, ``node_scripts``) — the same
files ``vllm-wizard plan --out/--script`` writes — with the provenance the CLI records (catalog source
and revision, hardware profile, device count, a hardware snapshot, the selection), so a run launched
from the wizard can be reproduced and diffed like one launched from the CLI.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

from vllm_deploy_wizard import __version__


def default_export_dir() -> Path:
    """``./vllm-wizard-<YYYYmmdd-HHMMSS>`` in the current directory (created)."""
    path = Path.cwd() / f"vllm-wizard-{time.strftime('%Y%m%d-%H%M%S')}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def runs_plan_path(stamp: str) -> Path:
    """Where a launched plan is kept: ``<XDG state>/vllm-wizard/plans/plan-<stamp>.yaml`` (0700 dir)."""
    from vllm_deploy_wizard.common import appdirs

    folder = appdirs.state_dir() / "plans"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / f"plan-{stamp}.yaml"


def hardware_snapshot(app: Any) -> dict | None:
    """The detect summary recorded in provenance (the same keys ``plan --detect`` records)."""
    inv = app.inventory
    if inv is None:
        return None
    primary = getattr(inv, "primary", None)
    best = app.candidates[0] if app.candidates else None
    return {
        "source": getattr(inv, "source", "live"),
        "device_count": getattr(inv, "device_count", None),
        "accelerator": getattr(primary, "name", None),
        "brand": getattr(primary, "brand", None),
        "matched_profile": getattr(best, "profile_id", None),
        "match_quality": getattr(best, "quality", None),
        "notes": list(getattr(best, "notes", []) or []),
    }


def plan_document(app: Any) -> dict:
    """The contracts §2 plan-file mapping for the app's current plan (``app.plan``)."""
    from vllm_deploy_wizard.catalog.render import plan_file

    plan = app.plan
    source = app.services.extras.get("source")
    planned = app.planned_selection() if hasattr(app, "planned_selection") else dict(app.selection)
    selection = app.services.make_selection(planned)  # the selection the plan was made from
    dump = selection.model_dump(exclude_none=True, exclude_defaults=True) if hasattr(selection, "model_dump") else planned
    provenance = {
        "catalog_source": getattr(source, "label", None) or (str(app.recipes) if app.recipes else "bundled"),
        "catalog_revision": getattr(source, "revision", None) or getattr(app.catalog, "revision", None),
        "recipes_revision": getattr(app.catalog, "recipes_revision", None) or None,
        "unverified": list(getattr(plan, "unverified", []) or []),
        "hardware_profile": plan.resolved["hardware"],
        "device_count": plan.device_count,
        "hardware_snapshot": hardware_snapshot(app),
        "selection": dump,
    }
    return plan_file(plan, provenance, __version__)


def write_plan_file(app: Any, path: Path) -> Path:
    """Write the plan file for the app's current plan to ``path`` (YAML), mode 0600, atomically;
    returns ``path``.

    The plan holds what the person typed, API keys included (``--api-key K``; the launcher masks them
    only in its run dir), so the file is readable by its owner alone and never
    seen half-written: the text goes to a ``mkstemp`` file (created 0600) in the same folder, which
    is then renamed over ``path``. Raises OSError when the folder cannot be written."""
    from vllm_deploy_wizard.common.files import write_atomic

    text = yaml.safe_dump(plan_document(app), sort_keys=False, allow_unicode=True)
    return write_atomic(path, text, mode=0o600)


def write_scripts(plan: Any, directory: Path) -> list[Path]:
    """One bash script per node (``catalog.render.node_scripts``) in ``directory``; returns the paths.

    Each is written atomically with mode 0700 (owner only, like ``vllm-wizard plan --script``): a
    script carries what the person typed, ``--api-key`` included. Raises OSError when the folder
    cannot be written."""
    from vllm_deploy_wizard.catalog.render import node_scripts
    from vllm_deploy_wizard.common.files import write_atomic

    return [write_atomic(directory / name, text, mode=0o700) for name, text in node_scripts(plan).items()]
