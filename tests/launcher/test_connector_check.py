"""Preflight: a ``vllm serve`` whose ``--kv-transfer-config`` names an LMCache connector is refused when
the Python that runs that ``vllm`` cannot import ``lmcache`` (vLLM 0.32.0
``…/kv_connector/v1/lmcache_connector.py`` / ``lmcache_mp_connector.py`` import it at engine start), even
with an ``lmcache`` CLI of another environment on PATH; real interpreters, real probe subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_env import cache_root

from vllm_deploy_wizard.launcher import connector_check
from vllm_deploy_wizard.launcher.causes import classify
from vllm_deploy_wizard.launcher.connector_check import connector_modules, connector_problems, interpreter_of
from vllm_deploy_wizard.launcher.preflight import check, run_command
from vllm_deploy_wizard.launcher.spec import ProcessSpec, RunSpec

LMCACHE = json.dumps({"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"})


def _vllm_script(folder: Path, python: str) -> Path:
    """A ``vllm`` console script as pip writes it: a shebang naming its environment's Python."""
    exe = folder / "bin" / "vllm"
    exe.parent.mkdir(parents=True, exist_ok=True)
    exe.write_text(f"#!{python}\nimport sys\nsys.exit(0)\n")
    exe.chmod(0o755)
    return exe


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A real venv without lmcache (no pip: fast to make)."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


def _spec(exe: Path, config: str = LMCACHE) -> RunSpec:
    return RunSpec(processes=[ProcessSpec(name="vllm", argv=(str(exe), "serve", "/models/tiny",
                                                              "--kv-transfer-config", config))])


def test_connector_modules_read_the_config_and_multiconnector_children():
    assert connector_modules(["vllm", "serve", "m", "--kv-transfer-config", LMCACHE]) == [
        ("LMCacheConnectorV1", "lmcache")]
    multi = {"kv_connector": "MultiConnector", "kv_connector_extra_config": {"connectors": [
        {"kv_connector": "NixlConnector"}, {"kv_connector": "LMCacheMPConnector"}]}}
    assert connector_modules(["vllm", "serve", "m", f"--kv-transfer-config={json.dumps(multi)}"]) == [
        ("LMCacheMPConnector", "lmcache")]
    assert connector_modules(["vllm", "serve", "m", "--kv-transfer-config", '{"kv_connector":"NixlConnector"}']) == []
    assert connector_modules(["vllm", "serve", "m", "--kv-transfer-config", "not json"]) == []


def test_the_vllm_of_an_env_without_lmcache_is_refused_with_the_missing_module_fix(tmp_path, bare_python):
    # an lmcache CLI on PATH (another environment) does not count: the vllm's own Python is asked
    other = tmp_path / "other" / "bin"
    other.mkdir(parents=True)
    (other / "lmcache").write_text("#!/bin/sh\n")
    (other / "lmcache").chmod(0o755)
    exe = _vllm_script(tmp_path / "venv-vllm", bare_python)
    assert interpreter_of([str(exe)], {"PATH": str(other)}) == bare_python
    problems = check(_spec(exe), check_flags=False, cache=tmp_path / "cache",
                     base_env={"PATH": f"{other}:/usr/bin:/bin"})
    [problem] = [x for x in problems if "lmcache" in x]
    assert "LMCacheConnectorV1" in problem and bare_python in problem
    assert "vllm/distributed/kv_transfer/kv_connector/v1/lmcache_connector.py" in problem
    # the same fix text as the missing_module cause vLLM's own ModuleNotFoundError gets
    prefix = str(Path(bare_python).parent.parent)
    cause = classify(["ModuleNotFoundError: No module named 'lmcache'"], rc=1, argv=[f"{prefix}/bin/vllm", "serve"])
    assert problem.endswith(cause.fix)
    assert not list((tmp_path / "cache").glob("module-*"))  # a missing module is not cached


def test_the_vllm_of_the_lmcache_env_passes_and_the_answer_is_cached(tmp_path):
    venv = cache_root() / "lmcache"
    if not (venv / ".done").exists():
        pytest.skip(f"the e2e lmcache venv is not built ({venv}); the e2e suite builds it")
    exe = _vllm_script(tmp_path / "venv-vllm", str(venv / "bin" / "python"))
    cache = tmp_path / "cache"
    env = {"PATH": "/usr/bin:/bin"}
    argv = list(_spec(exe).processes[0].argv)
    assert connector_problems("vllm", argv, env, run_command, cache) == []
    assert len(list(cache.glob("module-*.found"))) == 1

    def no_probe(*_a):
        raise AssertionError("a cached answer must not run the interpreter")

    assert connector_problems("vllm", argv, env, no_probe, cache) == []
    assert [x for x in check(_spec(exe), check_flags=False, cache=cache, base_env=env) if "lmcache" in x] == []


def test_a_plan_without_an_lmcache_connector_runs_no_probe(tmp_path, bare_python):
    exe = _vllm_script(tmp_path / "v", bare_python)

    def no_probe(*_a):
        raise AssertionError("no connector module to look for")

    assert connector_problems("vllm", [str(exe), "serve", "m"], {}, no_probe, tmp_path) == []
    assert connector_check.interpreter_of(["/bin/sh"], {}) is None  # not a Python: nothing to ask
