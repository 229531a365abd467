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


def plan_document(app: Any) -> dict:
    """The contracts §2 plan-file mapping for the app's current plan (``app.plan``) — the one
    :func:`workflows.planning.plan_document` ``vllm-wizard plan --out`` writes too."""
    from vllm_deploy_wizard.workflows.planning import plan_document as document

    planned = app.planned_selection() if hasattr(app, "planned_selection") else dict(app.selection)
    selection = app.services.make_selection(planned)  # the selection the plan was made from
    return document(app.plan, selection, app.catalog, app.services.extras.get("source"), app.hardware_snapshot())


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
