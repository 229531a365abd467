"""Shared test fixtures: where ../shared lives."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Read-only material beside the project (never copied into it).
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared() -> Path:
    """Path of ``../shared``; skips the test when it is not there (a bare clone elsewhere)."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside the project")
    return SHARED
