"""The wizard's services do not import the launcher until it is used (issue #21: the first usable
screen does not wait for it), and the deferred launcher is the real one once used."""

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
