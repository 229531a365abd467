"""The real chain from the app: detection on this machine, the test-made tiny model
as a custom model, the real ``vllm serve`` CPU build launched from the review screen, READY in the
monitor, a smoke request answered, detach, re-attach from a new app, stop, zero survivors.

Environments come from the launcher's e2e builder (``tests/launcher/e2e_env.py``, cached outside the
clone); a piece that cannot be built here skips with its reason.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from polling import wait_until
from textual.widgets import Input
from tui_steps import settle, until

from vllm_deploy_wizard.tui.app import make_app
from vllm_deploy_wizard.tui.prompts import ConfirmPrompt
from vllm_deploy_wizard.tui.run_offers import AttachPrompt
from vllm_deploy_wizard.tui.screen_configure import ConfigureScreen
from vllm_deploy_wizard.tui.screen_monitor import MonitorScreen
from vllm_deploy_wizard.tui.screen_review import ReviewScreen

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "launcher"))
from children import cleanup_runs  # tests/launcher, on sys.path from the line above
from e2e_env import E2EUnavailable, tiny_model, vllm_env

pytestmark = pytest.mark.e2e

#: Seconds the CPU build may take to load the tiny model on a busy 2-core machine.
READY_TIMEOUT = 420


@pytest.fixture(scope="module")
def real():
    try:
        return {"bin": vllm_env(), "model": tiny_model()}
    except E2EUnavailable as exc:
        pytest.skip(f"real environment unavailable: {exc}")


@pytest.fixture
def no_leftover_run(tmp_path):
    """A failed assertion must not leave a real vLLM running for the rest of the suite."""
    yield
    cleanup_runs(tmp_path / "state")


def _review_status(app) -> str:
    """What the review screen's status line says (a refused launch lists its problems there)."""
    from textual.widgets import Static

    found = app.screen.query("#review-status")
    return str(found.first(Static).render()) if found else f"(on {type(app.screen).__name__})"


async def test_real_chain_from_the_app(real, tmp_path, monkeypatch, no_leftover_run):
    from vllm_deploy_wizard.launcher import list_runs, run_survivors
    from vllm_deploy_wizard.launcher.ports import free_port

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("PATH", f"{real['bin']}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    port = free_port()
    app = make_app()  # real detection, bundled catalog, real launcher
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.catalog is not None and app.inventory is not None
                    and app.selection.get("hardware"), 60, "detection and the catalog")
        profile = app.catalog.taxonomy.hardware_profiles[app.selection["hardware"]]
        # the CPU profile
        assert profile.brand == "Intel" and app.selection["hardware"].startswith("xeon"), app.selection
        await pilot.press("ctrl+n")
        await settle(pilot)
        custom = app.screen.query_one("#custom", Input)
        custom.focus()
        custom.value = str(real["model"])
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfigureScreen), 60, "the custom model's configure screen")
        assert app.selection["model"] == str(real["model"])
        args = app.screen.query_one("#advanced-args", Input)
        args.focus()
        args.value = (f"--host 127.0.0.1 --port {port} --tensor-parallel-size 1 --max-model-len 256 "
                      "--enforce-eager --dtype float32")
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)
        await pilot.press("ctrl+l")  # works whatever has focus
        # preflight runs `vllm serve --help=all` on a cold flag cache (~13 s idle, minutes on a loaded 2-core box)
        await until(pilot, lambda: isinstance(app.screen, MonitorScreen) or "Launch refused" in _review_status(app),
                    300, "the monitor (preflight + start)", detail=lambda: f"review status: {_review_status(app)}")
        assert isinstance(app.screen, MonitorScreen), _review_status(app)  # a refused launch fails at once
        monitor = app.screen
        run_id = monitor.run_id
        await until(pilot, lambda: "vllm" in monitor.model.procs and monitor.model.procs["vllm"].ready,
                    READY_TIMEOUT, "vllm READY in the monitor")
        await pilot.press("m")
        await until(pilot, lambda: getattr(monitor, "last_smoke", None) is not None, 120, "the smoke answer")
        assert monitor.last_smoke.ok, monitor.last_smoke
        assert monitor.last_smoke.text.strip(), "the tiny model answered with text"
        await pilot.press("d")  # detach: the run lives on
        await settle(pilot)
        assert not isinstance(app.screen, MonitorScreen)

    info = next(r for r in list_runs() if r.run_id == run_id)
    assert info.status == "running"

    app2 = make_app()
    async with app2.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app2.screen, AttachPrompt), 60, "the attach offer")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app2.screen, MonitorScreen), 30, "the re-attached monitor")
        monitor = app2.screen
        assert monitor.run_id == run_id
        await until(pilot, lambda: "vllm" in monitor.model.procs and monitor.model.procs["vllm"].state == "READY",
                    30, "the snapshot showing vllm READY")
        await pilot.press("s")  # asks first: one stray key must not stop a live server
        await until(pilot, lambda: isinstance(app2.screen, ConfirmPrompt), 10, "the stop confirmation")
        await pilot.press("y")
        await until(pilot, lambda: monitor.model.outcome is not None, 120, "the run to finish")
        assert monitor.model.outcome == "stopped"

    info = next(r for r in list_runs() if r.run_id == run_id)
    wait_until(lambda: not run_survivors(info), 30, "the run's processes gone", interval=0.5,
               detail=lambda: f"survivors: {[p.pid for p in run_survivors(info)]}")
