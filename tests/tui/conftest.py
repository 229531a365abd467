"""Fixtures for the wizard tests: the real bundled catalog, a fixed inventory, a launcher with canned
events, and an app factory wiring them through the real core seam (``make_app``)."""

from __future__ import annotations

import pytest
from fakes import FakeCandidate, FakeGroup, FakeInventory  # tests/tui is on sys.path (pytest rootdir mode)

from vllm_deploy_wizard.catalog import load_catalog
from vllm_deploy_wizard.tui.app import make_app
from vllm_deploy_wizard.tui.services import real_services


@pytest.fixture(scope="session")
def catalog():
    """The bundled catalog (seeds + curated recipes), loaded once."""
    return load_catalog()


@pytest.fixture
def build_app(catalog, tmp_path, monkeypatch):
    """``build_app(launcher=None, inventory=FakeInventory(), hardware='h200', **kw)`` → WizardApp
    on the real catalog core, detection replaced by a fixed inventory matching ``hardware``. Each test
    gets its own ``XDG_CONFIG_HOME`` (the saved/recent selections the first screen lists start empty)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))

    def build(launcher=None, inventory=None, hardware="h200", **kw):
        if inventory is None:  # a node that is exactly the profile (no device-count override)
            count = catalog.taxonomy.hardware_profiles[hardware].gpu_count
            inventory = FakeInventory(accelerators=[FakeGroup(name=hardware.upper(), count=count)], device_count=count)
        services = real_services()
        services.detect = lambda: inventory
        services.match_profiles = lambda inv, profiles: [FakeCandidate(hardware, "exact", ["fixture node"])]
        services.launcher = launcher
        kw.setdefault("stats_sampler", lambda: {"type": "stats", "cpu_percent": 37.0, "ram_percent": 50.0,
                                                "ram_used_gib": 12.0, "ram_total_gib": 24.0, "gpus": []})
        kw.setdefault("clock", lambda: 1_790_000_000.0)  # fixed wall clock: uptimes read 0s in snapshots
        return make_app(catalog=catalog, inventory=inventory, services=services, **kw)

    return build
