"""Run mypy over the package in its installed layout (``python tools/typecheck.py``).

mypy finds ``vllm_deploy_wizard.catalog`` … by walking folders, but pyproject maps those packages
from top-level folders (see :mod:`staged_layout`), so the sources are staged in a temporary folder
first. The settings are pyproject's ``[tool.mypy]``. Exit status: mypy's (0 = no finding).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from staged_layout import ROOT, stage  # after the sys.path line: the tools folder is not a package


def main() -> int:
    """Stage, run ``mypy -p vllm_deploy_wizard`` there with the project's config; return its status."""
    with tempfile.TemporaryDirectory(prefix="vllm-wizard-mypy-") as tmp:
        stage(Path(tmp))
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "-p", "vllm_deploy_wizard"]
        out = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        sys.stdout.write(out.stdout.replace(tmp + "/", ""))
        sys.stderr.write(out.stderr)
        return out.returncode


if __name__ == "__main__":
    raise SystemExit(main())
