"""The wizard on a ``--recipes`` checkout that does not load: the hardware list says why and what to do,
and neither ctrl+n nor a saved selection leads on to a step that would wait for the catalog forever."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fakes import FakeCandidate, FakeGroup, FakeInventory
from textual.widgets import OptionList
from tui_steps import until

from vllm_deploy_wizard.tui.app import make_app
from vllm_deploy_wizard.tui.screen_hardware import HardwareScreen
from vllm_deploy_wizard.tui.services import real_services

SNAPSHOT = Path(__file__).resolve().parents[3] / "shared" / "recipes-snapshot"


@pytest.fixture
def broken_checkout(tmp_path: Path) -> Path:
    """A copy of the recipes snapshot whose taxonomy.yaml is not YAML."""
    if not SNAPSHOT.is_dir():
        pytest.skip(f"needs the recipes snapshot at {SNAPSHOT}")
    root = tmp_path / "recipes"
    shutil.copytree(SNAPSHOT, root)
    (root / "taxonomy.yaml").write_text("hardware_profiles: [unclosed\n")
    return root


async def test_catalog_failure_is_shown_in_the_profile_list(broken_checkout, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    services = real_services()
    services.detect = lambda: FakeInventory(accelerators=[FakeGroup(name="H200", count=8)], device_count=8)
    services.match_profiles = lambda inv, profiles: [FakeCandidate("h200", "exact", ["fixture node"])]
    app = make_app(services=services, recipes=broken_checkout, stats_sampler=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: "catalog" in app.errors, 20, "the catalog load to fail")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HardwareScreen)
        shown = str(screen.query_one("#profiles", OptionList).get_option_at_index(0).prompt)
        assert "The catalog did not load" in shown and "taxonomy.yaml" in shown
        assert "catalog check" in shown
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert isinstance(app.screen, HardwareScreen)  # no step that would wait for the catalog
