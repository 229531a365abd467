"""Shared fixtures for the detect tests: the fixture directory and hardware profiles."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest


@pytest.fixture(scope="session")
def fixtures_dir(shared: Path) -> Path:
    """``../shared/fixtures/detect`` (read in place, never copied)."""
    return shared / "fixtures" / "detect"


@pytest.fixture(scope="session")
def profiles():
    """The bundled catalog's hardware profiles (what ``vllm-wizard detect`` matches against)."""
    from vllm_deploy_wizard.catalog import load_catalog

    return load_catalog().taxonomy.hardware_profiles


@pytest.fixture(scope="session")
def seed_profiles(shared: Path) -> dict[str, SimpleNamespace]:
    """Seed taxonomy profiles as plain namespaces: the matcher must not need the catalog's classes."""
    data = json.loads((shared / "seeds" / "000_da11c96847aa0d3a.txt").read_text())
    return {k: SimpleNamespace(**v) for k, v in data["hardware_profiles"].items()}
