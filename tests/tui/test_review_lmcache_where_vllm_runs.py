"""The review's "LMCache: installed" means importable by the Python that runs ``vllm`` (vLLM 0.32.0's
LMCache connectors import ``lmcache`` in the ``vllm serve`` process), not an ``lmcache`` CLI of another
environment on PATH: real interpreters (a bare venv; the e2e lmcache venv when built)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from vllm_deploy_wizard.tui import screen_review


def _software(tmp_path: Path, python: str, lmcache_found: str | None) -> SimpleNamespace:
    exe = tmp_path / "bin" / "vllm"
    exe.parent.mkdir(parents=True, exist_ok=True)
    exe.write_text(f"#!{python}\n")
    exe.chmod(0o755)
    return SimpleNamespace(vllm=SimpleNamespace(executable=str(exe)), lmcache=lmcache_found)


def test_an_lmcache_of_another_environment_is_not_installed_where_vllm_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    software = _software(tmp_path / "a", str(venv / "bin" / "python"), "0.3.9")
    text = screen_review._lmcache_text(software, "0.3.9")
    assert text == f"not installed where vLLM runs ({venv}/bin/python); 0.3.9 in another environment"
    # a vllm that is no Python console script (or not found): the detected answer stands
    assert screen_review._lmcache_text(SimpleNamespace(vllm=SimpleNamespace(executable=None)), "0.3.9") == "0.3.9"


def test_the_lmcache_env_s_own_vllm_says_installed(tmp_path, monkeypatch):
    # the e2e suite's venv (tests/launcher/e2e_env.py lmcache_env, under its cache root)
    lmcache = Path(os.environ.get("VLLM_WIZARD_TEST_CACHE", Path.home() / ".cache" / "vllm-wizard-tests")) / "lmcache"
    if not (lmcache / ".done").exists():
        pytest.skip(f"the e2e lmcache venv is not built ({lmcache})")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    software = _software(tmp_path / "b", str(lmcache / "bin" / "python"), None)
    assert screen_review._lmcache_text(software, None) == "installed"
