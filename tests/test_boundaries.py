"""What importing a package really loads (docs/architecture.md §2): the headless cores load no Textual,
catalog and launcher not each other, and the CLI starts without Textual or the TUI.

``.importlinter`` (tests/test_import_contracts.py) checks the import statements; this checks the modules
present after ``import`` in a fresh interpreter, which is what start-up time and a headless node see."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module, forbidden",
    [
        ("vllm_deploy_wizard.catalog",
         ["textual", "vllm_deploy_wizard.tui", "vllm_deploy_wizard.launcher", "vllm_deploy_wizard.detect"]),
        ("vllm_deploy_wizard.detect", ["textual", "vllm_deploy_wizard.tui", "vllm_deploy_wizard.launcher"]),
        ("vllm_deploy_wizard.launcher",
         ["textual", "vllm_deploy_wizard.tui", "vllm_deploy_wizard.catalog", "vllm_deploy_wizard.detect"]),
        ("vllm_deploy_wizard.cli", ["textual", "vllm_deploy_wizard.tui"]),
    ],
)
def test_package_does_not_import(module: str, forbidden: list[str]) -> None:
    code = (
        f"import sys, {module}\n"
        f"bad = [m for m in {forbidden!r} if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"{module} imported {out.stdout.strip()}"
