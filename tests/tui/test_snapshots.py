"""Appearance of every wizard screen at 120×40 and 80×24 (pytest-textual-snapshot).

The catalog is the bundled one, detection a fixed 8×H200 node, the launcher a fake replaying canned
events. Update after an intended change with ``pytest tests/tui/test_snapshots.py --snapshot-update``
and look at the report before committing.
"""

from __future__ import annotations

import pytest
from canned import ready_run
from fakes import FakeLauncher
from tui_steps import monitor_caught_up, pick, pick_hardware, pick_model, settle, until, walk

SIZES = [pytest.param((120, 40), id="120x40"), pytest.param((80, 24), id="80x24")]


async def steady(pilot) -> None:
    """Stop input cursors blinking (a blink phase would make the picture depend on timing)."""
    from textual.widgets import Input

    for box in pilot.app.screen.query(Input):
        box.cursor_blink = False
    await settle(pilot)


@pytest.fixture(autouse=True)
def _state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))


@pytest.mark.parametrize("size", SIZES)
def test_hardware_screen(snap_compare, build_app, size):
    """You should see the detected 8×H200 node with "Preselected: H200 (h200) — match: exact" on the
    left and the profiles grouped by brand (NVIDIA first) on the right, H200 marked ★ detected."""

    async def before(pilot):
        await settle(pilot)
        await steady(pilot)

    assert snap_compare(build_app(), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_model_screen(snap_compare, build_app, size):
    """You should see the search box with task/arch filters and the nine bundled recipes, each ✓ fits
    on H200, with the custom-model box at the bottom."""

    async def before(pilot):
        await pick_hardware(pilot, "h200")
        await steady(pilot)

    assert snap_compare(build_app(), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_configure_screen(snap_compare, build_app, size):
    """You should see Qwen3-32B's rows: BF16 picked, Tensor Parallel picked and TEP/DEP/DPA+TP disabled
    with "needs an MoE model", and the constraint panel's "runs on 1 of 8 GPUs" hint."""

    async def before(pilot):
        await pick_hardware(pilot, "h200")
        await pick_model(pilot, "Qwen/Qwen3-32B")
        await steady(pilot)

    assert snap_compare(build_app(), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_configure_screen_after_picks(snap_compare, build_app, size):
    """You should see Qwen3-30B-A3B with Data + Expert Parallel and LMCache picked (● marks moved)."""

    async def before(pilot):
        await pick_hardware(pilot, "h200")
        await pick_model(pilot, "Qwen/Qwen3-Next-80B-A3B-Instruct")
        await pick(pilot, "strategy", "single_node_dep")
        await pick(pilot, "kv_offload", "lmcache")
        await steady(pilot)

    assert snap_compare(build_app(), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_review_screen(snap_compare, build_app, size):
    """You should see the plan summary line, the install steps and one command block
    "node-0 · [engine] vllm (serve)" with `vllm serve Qwen/Qwen3-32B --tensor-parallel-size 1 …`, and a
    footer "esc Back ^l Launch ^r Preflight ^o Export ^t Scripts ^y Copy" (at 80×24 it ends at Copy)."""

    async def before(pilot):
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [])
        await steady(pilot)

    assert snap_compare(build_app(launcher=FakeLauncher()), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_monitor_screen(snap_compare, build_app, size):
    """You should see the process table with vllm READY (pid 4242, ✓ ready), its log with the WARNING
    line in yellow (no "[wizard] … → READY" supervisor notes), the side panel with "vllm: serving" and
    the metric sparklines, and the footer "s Stop r Restart d Detach m Smoke b Bench ^q Quit f1 Help" (x, only
    useful after a failure, is named by the failure box)."""

    async def before(pilot):
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [])
        await pilot.press("l")

        def screen():
            return pilot.app.screen

        await until(pilot, lambda: monitor_caught_up(screen()) and screen().model.procs["vllm"].ready
                    and len(screen().model.metrics["generation_tokens_per_s"]) == 2, 5,
                    "the canned history folded in and painted")
        await steady(pilot)

    assert snap_compare(build_app(launcher=FakeLauncher(events=ready_run())), terminal_size=size, run_before=before)


def test_configure_screen_no_color(snap_compare, build_app, monkeypatch):
    """You should see the configure screen in greys only (NO_COLOR), every state still readable from
    its mark: ● picked, ○ available, "— reason" on disabled rows, ⚠ in the constraint panel."""
    monkeypatch.setenv("NO_COLOR", "1")

    async def before(pilot):
        await pick_hardware(pilot, "h200")
        await pick_model(pilot, "Qwen/Qwen3-32B")
        await steady(pilot)

    assert snap_compare(build_app(), terminal_size=(80, 24), run_before=before)
