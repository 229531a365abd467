"""The suite keeps out of the user's real XDG dirs, but not out of the e2e cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_xdg_dirs_are_private_to_the_session(private_xdg_dirs, tmp_path_factory):
    import platformdirs

    base = tmp_path_factory.getbasetemp()
    for var in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        assert Path(os.environ[var]).is_relative_to(base), var
    # what the project writes: run dirs / saved plans, remembered recipes, preflight cache — and subprocesses
    assert Path(platformdirs.user_state_dir("vllm-wizard")).is_relative_to(base)
    assert Path(platformdirs.user_config_dir("vllm-wizard")).is_relative_to(base)
    from vllm_deploy_wizard.launcher.preflight import cache_dir

    assert cache_dir().is_relative_to(base)
    out = subprocess.run([sys.executable, "-c", "import platformdirs; print(platformdirs.user_cache_dir('x'))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert Path(out).is_relative_to(base)


def test_the_e2e_cache_and_hf_cache_stay_real(tmp_path_factory):
    import importlib.util

    spec = importlib.util.spec_from_file_location("e2e_env", Path(__file__).parent / "launcher" / "e2e_env.py")
    e2e_env = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(e2e_env)
    base = tmp_path_factory.getbasetemp()
    if "VLLM_WIZARD_TEST_CACHE" not in os.environ:
        assert e2e_env.cache_root() == Path.home() / ".cache" / "vllm-wizard-tests"
    assert not Path(os.environ["HF_HOME"]).is_relative_to(base)
