"""What the start-up benches set up before timing: the package's bytecode compiled.

``pip install`` of a wheel compiles every module; an editable install (and any environment with
``PYTHONDONTWRITEBYTECODE=1``, which child processes inherit) does not, so each timed start would
compile the project's ~300 modules from source again (~280 ms of CPU measured on the reference
box) — timing the compiler, not the start. :func:`precompile_package` writes the ``__pycache__``
files once, as an install does; the reference commands' packages (pydantic, yaml, textual) are
already compiled in site-packages.
"""

from __future__ import annotations

import compileall
import importlib.util
from pathlib import Path

#: The packages whose folders are compiled: the root and the folders pyproject maps under it.
PACKAGES = ("vllm_deploy_wizard", "vllm_deploy_wizard.catalog", "vllm_deploy_wizard.detect",
            "vllm_deploy_wizard.launcher", "vllm_deploy_wizard.tui")


def precompile_package() -> list[Path]:
    """Compile every module of :data:`PACKAGES` to bytecode (a no-op where it is current); returns
    the folders compiled. Raises ``RuntimeError`` when a package is not installed."""
    folders = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(f"{name} is not installed (pip install -e .)")
        folders.extend(Path(p) for p in spec.submodule_search_locations)
    for folder in folders:
        compileall.compile_dir(folder, quiet=1, workers=1)
    return folders
