"""What the wizard imports before its first usable screen (issue #21): not the launcher until it is
used (and then the deferred launcher is the real one), nor the planner; the hardware list needs
only detection, the catalog loader and profile matching."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = r"""
import json, sys
from pathlib import Path
from vllm_deploy_wizard.tui.services import real_services
services = real_services()
before = "vllm_deploy_wizard.launcher" in sys.modules
launcher = services.launcher
launcher.facts = "node facts"            # a write goes to the real launcher
from vllm_deploy_wizard.tui.launch_port import RealLauncher
real = launcher._target()
print(json.dumps({"before": before, "after": "vllm_deploy_wizard.launcher" in sys.modules,
                  "real": isinstance(real, RealLauncher), "facts": real.facts,
                  "same": launcher._target() is real, "stale": callable(getattr(launcher, "stale_runs"))}))
"""


def test_services_defer_the_launcher_import_until_first_use(tmp_path):
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {
        "before": False, "after": True, "real": True, "facts": "node facts", "same": True, "stale": True}


FIRST_SCREEN = r"""
import json, sys
from vllm_deploy_wizard.tui.services import real_services
services = real_services()
inventory = services.detect()
catalog = services.load_catalog(None)
services.match_profiles(inventory, catalog.taxonomy.hardware_profiles)
print(json.dumps(sorted(sys.modules)))
"""

#: What the hardware list (detect, load the catalog, match profiles) does not need.
NOT_FOR_THE_FIRST_SCREEN = ("vllm_deploy_wizard.launcher", "vllm_deploy_wizard.catalog.constraints",
                            "vllm_deploy_wizard.catalog.synthesis", "vllm_deploy_wizard.catalog.planner",
                            "huggingface_hub.file_download")


def test_what_the_first_screen_needs_imports_neither_the_planner_nor_the_launcher(tmp_path):
    proc = subprocess.run([sys.executable, "-c", FIRST_SCREEN], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    modules = json.loads(proc.stdout.splitlines()[-1])
    assert "vllm_deploy_wizard.catalog.loader" in modules and "vllm_deploy_wizard.detect.match" in modules
    assert [m for m in modules if m.startswith(NOT_FOR_THE_FIRST_SCREEN)] == []
