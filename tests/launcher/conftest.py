"""Fixtures shared by the launcher tests: the real ``vllm-wizard`` CLI in subprocesses, and the real
vLLM CPU build with the tiny model for the e2e tests."""

from __future__ import annotations

import os

import pytest
from children import cleanup_runs
from e2e_env import E2EUnavailable, tiny_model, vllm_env


@pytest.fixture
def env(tmp_path):
    """Environment for a CLI subprocess: private XDG state/cache dirs under ``tmp_path``, NO_COLOR.
    Whatever a test left running there is stopped afterwards (a failed test must not leak supervisors)."""
    e = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"), NO_COLOR="1")
    yield e
    cleanup_runs(tmp_path / "state")


@pytest.fixture(scope="module")
def real():
    """``{"vllm": <venv>/bin of the real vLLM CPU build, "model": the tiny model's folder}`` (built once,
    cached by :mod:`e2e_env`); the test skips with the reason when they cannot be built. A module
    that needs more of the real environment (router, lmcache) defines its own ``real``."""
    try:
        return {"vllm": vllm_env(), "model": tiny_model()}
    except E2EUnavailable as exc:
        pytest.skip(f"real environment unavailable: {exc}")
