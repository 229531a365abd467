"""The import contracts of docs/architecture.md §2 (``.importlinter``), checked with import-linter.

import-linter builds its graph by walking the root package's folder, but pyproject maps catalog/,
detect/, launcher/ and tui/ into ``vllm_deploy_wizard`` from outside that folder. So the test
copies the sources into the installed layout in a temporary folder and runs ``lint-imports`` there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from staged_layout import stage as staged_tree  # noqa: E402 — tools/ is not a package


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if exe is None:
        pytest.fail("lint-imports is not installed: pip install -e '.[test]' brings import-linter")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([exe, "--config", str(ROOT / ".importlinter"), "--no-cache"], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=300)


def test_import_contracts_hold(tmp_path) -> None:
    out = lint(staged_tree(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_a_broken_contract_fails(tmp_path) -> None:
    tree = staged_tree(tmp_path)
    (tree / "vllm_deploy_wizard" / "launcher" / "leak.py").write_text(
        "from vllm_deploy_wizard.catalog import load_catalog\n")
    out = lint(tree)
    assert out.returncode != 0 and "launcher-knows-no-recipes" not in out.stderr
    assert "The launcher reads plan files as data" in out.stdout and "BROKEN" in out.stdout


@pytest.mark.parametrize("where, imports", [
    ("common/leak.py", "from vllm_deploy_wizard.workflows import planning\n"),
    ("catalog/leak.py", "from vllm_deploy_wizard.workflows.launching import label_rank\n"),
    ("workflows/leak.py", "from vllm_deploy_wizard.commands import plan\n"),
])
def test_the_layers_contract_fails_on_an_upward_import(tmp_path, where, imports) -> None:
    """A helper, core or workflow that imports a layer above it breaks the layers contract."""
    tree = staged_tree(tmp_path)
    (tree / "vllm_deploy_wizard" / where).write_text(imports)
    out = lint(tree)
    assert out.returncode != 0
    assert "Layers: common < catalog" in out.stdout and "BROKEN" in out.stdout
