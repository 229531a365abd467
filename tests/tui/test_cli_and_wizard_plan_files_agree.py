"""The CLI and the wizard write the same plan file for the detected node.

Both faces plan through one workflow layer (``vllm_deploy_wizard.workflows.planning``): the detected
profile and devices per node, the hardware snapshot and provenance, the node facts the planner
applies and the plan-time warnings about this node. For every detection fixture (each machine, and
each failure scenario over its machine) and a spread of selections, the wizard's plan file
(:func:`tui.plan_export.plan_document` after the app's own defaults) and ``vllm-wizard plan
--replay FIXTURE --out`` given the same picks — but not the hardware and device count, which
detection must fill alike — are the same bytes, except the ``created`` time stamp.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from vllm_deploy_wizard.catalog.listing import listing_for
from vllm_deploy_wizard.catalog.loader import load_catalog
from vllm_deploy_wizard.cli import main
from vllm_deploy_wizard.detect import detect, match_profiles
from vllm_deploy_wizard.detect.fixture import FixtureFacts
from vllm_deploy_wizard.tui.app import WizardApp
from vllm_deploy_wizard.tui.plan_export import plan_document
from vllm_deploy_wizard.tui.services import real_services

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "detect"
MACHINES = sorted(p.name for p in FIXTURES.glob("*.yaml") if p.name != "failure_modes.yaml")
SCENARIOS = [s["id"] for s in (yaml.safe_load((FIXTURES / "failure_modes.yaml").read_text())["scenarios"]
                                if (FIXTURES / "failure_modes.yaml").exists() else [])]
CASES = [(m, None) for m in MACHINES] + [("failure_modes.yaml", s) for s in SCENARIOS] or [("no-shared", None)]


@pytest.fixture(scope="module")
def bundled():
    return load_catalog()


def _models_for(catalog, profile: str) -> list[tuple[str, bool]]:
    """A spread of recipe models the profile runs — the first, a middle and the last id by name —
    each with whether planning it needs ``allow_unverified`` (the profile is not in the recipe's list)."""
    status = listing_for(catalog, profile, detected=profile)
    for state in ("available", "unlisted"):
        ok = sorted(r.model.model_id for r in catalog.recipes.values() if status(r)[0] == state)
        if ok:
            return [(m, state == "unlisted") for m in sorted({ok[0], ok[len(ok) // 2], ok[-1]})]
    return []


def _wizard_document(catalog, inventory, model: str, unverified: bool) -> tuple[dict, dict]:
    """The wizard's plan file for ``model`` on the detected node, and the selection it planned."""
    services = real_services()
    services.launcher = None
    app = WizardApp(services=services, catalog=catalog, inventory=inventory)
    app._settle()
    app.update_selection(model=model, allow_unverified=True if unverified else None)
    app.build_plan()
    return plan_document(app), app.planned_selection()


def _strip_created(text: str) -> str:
    return re.sub(r"^created: .*$", "created: <time>", text, flags=re.M)


@pytest.mark.parametrize("fixture, scenario", CASES, ids=[s or m for m, s in CASES])
def test_the_cli_and_the_wizard_write_the_same_plan_file(shared, bundled, tmp_path, capsys, fixture, scenario):
    path = shared / "fixtures" / "detect" / fixture
    inventory = detect(FixtureFacts.load(path, scenario))
    best = match_profiles(inventory, bundled.taxonomy.hardware_profiles)[0]
    if not best.profile_id or best.quality == "none":
        pytest.skip(f"{scenario or fixture}: detection preselects no profile ({best.notes}), nothing to plan")
    models = _models_for(bundled, best.profile_id)
    assert models, f"no recipe runs on {best.profile_id}"
    for model, unverified in models:
        wizard_doc, picks = _wizard_document(bundled, inventory, model, unverified)
        given = {k: v for k, v in picks.items() if k not in ("hardware", "gpus")}  # detection fills these
        selection = tmp_path / f"{model.replace('/', '_')}.yaml"
        selection.write_text(yaml.safe_dump(given))
        out = tmp_path / "plan.yaml"
        argv = ["plan", "--replay", str(path), "--selection", str(selection), "--out", str(out)]
        code = main(argv + (["--scenario", scenario] if scenario else []))
        assert code == 0, capsys.readouterr().err
        wizard_text = yaml.safe_dump(wizard_doc, sort_keys=False, allow_unicode=True)
        assert _strip_created(out.read_text()) == _strip_created(wizard_text), (scenario or fixture, model)
