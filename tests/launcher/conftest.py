"""Fixtures shared by the launcher tests that run the real ``vllm-wizard`` CLI in subprocesses."""

from __future__ import annotations

import os

import pytest
from children import cleanup_runs


@pytest.fixture
def env(tmp_path):
    """Environment for a CLI subprocess: private XDG state/cache dirs under ``tmp_path``, NO_COLOR.
    Whatever a test left running there is stopped afterwards (a failed test must not leak supervisors)."""
    e = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"), NO_COLOR="1")
    yield e
    cleanup_runs(tmp_path / "state")
