"""The headless cores never import Textual, and catalog/launcher don't import each other (DESIGN.md)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module, forbidden",
    [
        ("vllm_wizard.catalog", ["textual", "vllm_wizard.tui", "vllm_wizard.launcher", "vllm_wizard.detect"]),
        ("vllm_wizard.detect", ["textual", "vllm_wizard.tui", "vllm_wizard.launcher"]),
        ("vllm_wizard.launcher", ["textual", "vllm_wizard.tui", "vllm_wizard.catalog", "vllm_wizard.detect"]),
        ("vllm_wizard.cli", ["textual", "vllm_wizard.tui"]),
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
