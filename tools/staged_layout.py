"""Stage the sources in their installed layout, for tools that walk one package folder.

pyproject maps ``catalog/``, ``detect/``, ``launcher/`` and ``tui/`` into ``vllm_deploy_wizard``
from outside its folder (``[tool.setuptools.package-dir]``). import-linter and mypy find modules by
walking folders, so they need the installed layout: this copies the sources into a folder laid out
as site-packages would hold them (``DEST/vllm_deploy_wizard/catalog/…``).

Used by ``tests/test_import_contracts.py`` and ``tools/typecheck.py``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Installed layout: package path → source folder (pyproject ``[tool.setuptools.package-dir]``).
LAYOUT = {"vllm_deploy_wizard": "vllm_deploy_wizard", "vllm_deploy_wizard/catalog": "catalog",
          "vllm_deploy_wizard/detect": "detect", "vllm_deploy_wizard/launcher": "launcher",
          "vllm_deploy_wizard/tui": "tui"}


def stage(dest: Path) -> Path:
    """Copy the package sources into ``dest`` in the installed layout (data files and ``.tcss`` left
    out); returns ``dest``. Raises OSError when ``dest`` can't be written."""
    for target, source in LAYOUT.items():
        shutil.copytree(ROOT / source, dest / target, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "data", "*.tcss"))
    return dest
