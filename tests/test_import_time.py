"""What a command imports before it does anything, checked in a fresh interpreter: ``--help`` must
stay cheap (docs/architecture.md §2 boundaries), so it imports neither the launcher nor the
catalog's pydantic models (nor Textual)."""

from __future__ import annotations

import json
import subprocess
import sys

#: Module prefixes ``vllm-wizard --help`` (and a sub-command's ``--help``) must not import.
HEAVY = ("vllm_deploy_wizard.launcher", "vllm_deploy_wizard.catalog", "vllm_deploy_wizard.detect",
         "vllm_deploy_wizard.tui", "pydantic", "textual", "yaml")

PROBE = r"""
import contextlib, io, json, sys
from vllm_deploy_wizard.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps({"modules": sorted(sys.modules), "help": out.getvalue()}))
"""


def _imported(*argv: str) -> tuple[list[str], str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout.splitlines()[-1])
    return data["modules"], data["help"]


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_help_imports_neither_the_launcher_nor_the_catalog_models():
    modules, text = _imported("--help")
    assert "usage: vllm-wizard" in text and "stop" in text and "logs" in text
    assert _heavy(modules) == []


def test_stop_help_names_the_launchers_default_without_importing_it():
    modules, text = _imported("stop", "--help")
    assert _heavy(modules) == []
    from vllm_deploy_wizard.launcher.timeouts import STALE_STOP_TIMEOUT_S

    assert f"(default {STALE_STOP_TIMEOUT_S:g})" in " ".join(text.split())
