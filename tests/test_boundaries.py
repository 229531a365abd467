"""The headless cores never import Textual, and catalog/launcher don't import each other (docs/architecture.md §2)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module, forbidden",
    [
        ("vllm_deploy_wizard.catalog", ["textual", "vllm_deploy_wizard.tui", "vllm_deploy_wizard.launcher", "vllm_deploy_wizard.detect"]),
        ("vllm_deploy_wizard.detect", ["textual", "vllm_deploy_wizard.tui", "vllm_deploy_wizard.launcher"]),
        ("vllm_deploy_wizard.launcher", ["textual", "vllm_deploy_wizard.tui", "vllm_deploy_wizard.catalog", "vllm_deploy_wizard.detect"]),
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
