"""Shared test fixtures: where ../shared lives, and private XDG directories for the whole session.

Why private XDG dirs: plans saved by the TUI (``$XDG_STATE_HOME/vllm-wizard/
plans``), run directories, the remembered recipes dir (``$XDG_CONFIG_HOME``) and the preflight's
vLLM flag cache (``$XDG_CACHE_HOME/vllm-wizard``) all go through ``platformdirs``, so without this
``pytest`` wrote into the developer's real ``~/.local/state`` and ``~/.cache``. The autouse session
fixture points ``XDG_STATE_HOME``, ``XDG_CONFIG_HOME``, ``XDG_CACHE_HOME`` and ``XDG_DATA_HOME`` at
one temporary folder per session (subprocesses inherit it); a test that sets its own still wins.

What stays real, on purpose:

* the end-to-end environments (vLLM CPU build, router, LMCache, tiny model) under
  ``$VLLM_WIZARD_TEST_CACHE``, default ``Path.home()/.cache/vllm-wizard-tests`` — computed from
  the home directory, not ``XDG_CACHE_HOME`` (tests/launcher/e2e_env.py), so the minutes-long
  builds are reused across sessions;
* the Hugging Face cache: ``HF_HOME`` is pinned to where it was before (``$HF_HOME``, else the
  real ``$XDG_CACHE_HOME/huggingface``, else ``~/.cache/huggingface``) so models found before are
  found now, and ``huggingface_hub`` (which reads its paths once, at import) agrees whether it was
  imported before or after this fixture. Tests that set ``HF_HOME`` themselves still win.

vLLM's own small caches (``$XDG_CACHE_HOME/vllm``) follow the private dir, and the TUI real-chain
test's preflight therefore runs ``vllm --version`` / ``serve --help=all`` once per session.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Read-only material beside the project (never copied into it).
SHARED = ROOT.parent / "shared"

#: The XDG base directories redirected per session (XDG Base Directory spec names).
XDG_VARS = ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME")


#: Skip reason of every test that reads ``../shared`` when it is absent (counted in the summary).
SHARED_MISSING = "../shared is not beside the project"


@pytest.fixture(scope="session")
def shared() -> Path:
    """Path of ``../shared``; skips the test when it is not there (a bare clone elsewhere)."""
    if not SHARED.is_dir():
        pytest.skip(SHARED_MISSING)
    return SHARED


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Say how many tests were skipped because ``../shared`` is missing, and what they need."""
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if isinstance(r.longrepr, tuple) and SHARED_MISSING in str(r.longrepr[-1])]
    if not skipped:
        return
    files = sorted({r.nodeid.split("::", 1)[0] for r in skipped})
    terminalreporter.write_sep("=", "tests that need ../shared")
    terminalreporter.write_line(
        f"{len(skipped)} tests skipped: {SHARED} is missing. They read the reference material beside the "
        "project (recipes snapshot, golden cases, detect fixtures, specs); put a checkout of it there to "
        f"run them. Files: {', '.join(files)}")


@pytest.fixture(scope="session", autouse=True)
def private_xdg_dirs(tmp_path_factory: pytest.TempPathFactory):
    """Point the XDG base dirs at ``<session tmp>/xdg/{state,config,cache,data}`` for the session;
    yields ``{var: Path}``. ``HF_HOME`` keeps the real Hugging Face cache (module docstring)."""
    real_cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    base = tmp_path_factory.mktemp("xdg")
    dirs = {var: base / var.split("_")[1].lower() for var in XDG_VARS}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HOME", os.environ.get("HF_HOME") or str(Path(real_cache) / "huggingface"))
        for var, path in dirs.items():
            path.mkdir()
            mp.setenv(var, str(path))
        yield dirs
