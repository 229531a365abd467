"""``b`` in the monitor opens the benchmark screen: a sweep (the real launcher.bench driver with a fake
``vllm bench serve``) fills the table and the plots live, saves JSON + CSV with the run, exports an
SVG, and an earlier sweep of the same model is overlaid on the plots."""

from __future__ import annotations

import json
import os
import time
from types import SimpleNamespace

from canned import ready_run
from fakes import FakeLauncher
from textual.widgets import DataTable, Input
from tui_steps import settle, walk

from vllm_deploy_wizard.launcher import bench
from vllm_deploy_wizard.tui.screen_bench import BenchScreen
from vllm_deploy_wizard.tui.screen_monitor import MonitorScreen
from vllm_deploy_wizard.tui.screen_review import ReviewScreen

TPUT = {1: 100.0, 2: 190.0, 4: 260.0, 8: 262.0}


def fake_step(argv, env, deadline, progress, cancel, log=None):
    """``vllm bench serve`` stand-in: the result JSON vLLM 0.32 writes, throughput from :data:`TPUT`."""
    a = dict(zip(argv, argv[1:], strict=False))
    c, n = int(a["--max-concurrency"]), int(a["--num-prompts"])
    progress(n, n)
    data = {"completed": n, "failed": 0, "duration": 1.0, "request_throughput": n / 1.0, "output_throughput": TPUT[c],
            "total_token_throughput": TPUT[c] * 2, "p50_ttft_ms": 10.0 * c, "p99_ttft_ms": 20.0 * c,
            "p50_itl_ms": 1.0 * c, "p99_itl_ms": 2.0 * c, "num_prompts": n}
    with open(os.path.join(a["--result-dir"], a["--result-filename"]), "w") as fh:
        json.dump(data, fh)
    return 0, ""


class Bench:
    """The benchmark seam: the real launcher.bench with the fake step runner and a fixed target."""

    def __init__(self, root):
        self.root = root
        self.pids = None

    def target_from_run(self, run_dir, pids):
        self.pids = pids
        return bench.BenchTarget("http://127.0.0.1:8000", "Qwen/Qwen3-32B", "Qwen/Qwen3-32B", "/venv/bin/vllm")

    def run_sweep(self, target, config, run_dir, on_event=None, cancel=None):
        return bench.run_sweep(target, config, run_dir, on_event=on_event, cancel=cancel, step_runner=fake_step)

    def list_sweeps(self, root, model=None):
        return bench.list_sweeps(root, model)

    def runs_root(self):
        return self.root


class RunLauncher(FakeLauncher):
    def __init__(self, run_dir, **kw):
        super().__init__(**kw)
        self.run_dir = run_dir

    def client(self, run_id):
        c = super().client(run_id)
        c.info = SimpleNamespace(run_dir=self.run_dir)
        return c


async def _until(pilot, cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.02)
        if cond():
            return
    raise AssertionError("condition not met before the deadline")


async def test_b_runs_a_sweep_with_plots_exports_svg_and_compares(build_app, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    runs = tmp_path / "runs"
    run_dir = runs / "run-1"
    run_dir.mkdir(parents=True)
    app = build_app(launcher=RunLauncher(run_dir, events=ready_run()))
    seam = Bench(runs)
    app.services.bench = seam
    async with app.run_test(size=(120, 45)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [])
        assert isinstance(app.screen, ReviewScreen)
        await pilot.press("l")
        await _until(pilot, lambda: isinstance(app.screen, MonitorScreen))
        await pilot.pause(0.3)
        await pilot.press("b")
        await _until(pilot, lambda: isinstance(app.screen, BenchScreen))
        screen = app.screen
        assert seam.pids == {"vllm": 4242}  # the live pid goes to the target lookup
        screen.query_one("#bench-budget", Input).value = "120"
        await pilot.press("g")
        await _until(pilot, lambda: screen.sweep is not None)
        assert [s.concurrency for s in screen.steps] == [1, 2, 4, 8]  # 260 → 262 is < 5 %: stop
        table = screen.query_one("#bench-table", DataTable)
        assert table.row_count == 4
        labels = [str(col.label) for col in table.columns.values()]
        assert {"out tok/s", "TTFT p50 (ms)", "TTFT p99 (ms)", "ITL p50 (ms)", "ITL p99 (ms)"} <= set(labels)
        assert table.get_row_at(0)[labels.index("ITL p50 (ms)")] == "1.00"  # the fake's 1.0 ms at concurrency 1
        status = str(screen.query_one("#bench-status").render())
        assert "from concurrency 4 to 8" in status and "sweep.json" in status
        assert (screen.sweep.path / "sweep.csv").read_text().count("\n") == 5
        # mid-sweep, the bar is the sweep's: two finished steps of four planned is 50 %, not the new step's 0 %
        screen.on_sweep_event(bench.SweepEvent("step", 4, 0, 16, 40.0, finished=2, planned=4))
        assert screen.query_one("#bench-progress").progress == 50
        assert "step 3 of ≤ 4 · concurrency 4: 0/16 requests · 40 s" in str(screen.query_one("#bench-status").render())
        assert screen.sweep.config.budget_s == 120.0
        series = screen.series()
        assert series["plot-output"] == [("output", [1, 2, 4, 8], [100.0, 190.0, 260.0, 262.0])]
        assert [legend for legend, _, _ in series["plot-ttft"]] == ["p50", "p99"]
        await pilot.press("e")
        await settle(pilot)
        svg = (screen.sweep.path / "bench.svg").read_text()
        assert svg.startswith("<svg") and "Output" in svg
        first = screen.sweep
        # a second sweep, then overlay the first one
        await pilot.press("g")
        await _until(pilot, lambda: screen.sweep is not None and screen.sweep.path != first.path)
        await pilot.press("v")
        await settle(pilot)
        assert screen.compare_with is not None and screen.compare_with.path == first.path
        legends = [legend for legend, _, _ in screen.series()["plot-output"]]
        assert legends == ["output this", f"output {first.label}"]
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MonitorScreen)


async def test_a_setting_that_is_not_a_number_names_the_field(build_app, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    run_dir = tmp_path / "runs" / "run-1"
    run_dir.mkdir(parents=True)
    app = build_app(launcher=RunLauncher(run_dir, events=ready_run()))
    app.services.bench = Bench(tmp_path / "runs")
    async with app.run_test(size=(120, 45)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [])
        await pilot.press("l")
        await _until(pilot, lambda: isinstance(app.screen, MonitorScreen))
        await pilot.pause(0.2)
        await pilot.press("b")
        await _until(pilot, lambda: isinstance(app.screen, BenchScreen))
        screen = app.screen
        screen.query_one("#bench-output-len", Input).value = "0"
        await pilot.press("g")
        await settle(pilot)
        assert not screen.running and screen.sweep is None
        assert "output_len must be a whole number ≥ 1" in str(screen.query_one("#bench-status").render())


class StoppingClient:
    """A run client that replays ``events`` and, on ``stop()``, ends the stream with the supervisor's
    ``RunFinished("stopped", [], None)`` (the monitor then shows "Run stopped; no survivors")."""

    def __init__(self, events, run_dir):
        self._events, self.commands = events, []
        self.info = SimpleNamespace(run_dir=run_dir)
        self._stopped = None

    async def events(self):
        import asyncio

        from vllm_deploy_wizard.launcher.supervisor import RunFinished

        self._stopped = asyncio.Event()
        for ev in self._events:
            yield ev
        await self._stopped.wait()
        yield RunFinished("stopped", [], None)

    async def stop(self):
        self.commands.append("stop")
        self._stopped.set()

    async def restart(self, name):
        self.commands.append(f"restart {name}")


class StoppingLauncher(FakeLauncher):
    def __init__(self, run_dir, **kw):
        super().__init__(**kw)
        self.run_dir = run_dir

    def client(self, run_id):
        self.clients[run_id] = StoppingClient(self.events, self.run_dir)
        return self.clients[run_id]


class CountingBench(Bench):
    def __init__(self, root):
        super().__init__(root)
        self.sweeps = 0

    def run_sweep(self, target, config, run_dir, on_event=None, cancel=None):
        self.sweeps += 1
        return super().run_sweep(target, config, run_dir, on_event=on_event, cancel=cancel)


def _notes(app):
    return [n.message for n in app._notifications]


async def _stop_run(pilot, app, screen):
    await pilot.press("s")
    await settle(pilot)
    await pilot.press("y")
    await _until(pilot, lambda: screen.model.outcome == "stopped")


async def test_b_on_a_stopped_run_says_so_and_opens_no_bench_screen(build_app, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    run_dir = tmp_path / "runs" / "run-1"
    run_dir.mkdir(parents=True)
    app = build_app(launcher=StoppingLauncher(run_dir, events=ready_run()))
    seam = CountingBench(tmp_path / "runs")
    app.services.bench = seam
    async with app.run_test(size=(120, 45)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [])
        await pilot.press("l")
        await _until(pilot, lambda: isinstance(app.screen, MonitorScreen))
        monitor = app.screen
        await pilot.pause(0.2)
        await _stop_run(pilot, app, monitor)
        await pilot.press("b")
        await settle(pilot)
        assert isinstance(app.screen, MonitorScreen)  # no bench screen over a stopped run
        assert seam.pids is None and seam.sweeps == 0  # not even the target lookup
        note = next(n for n in _notes(app) if "benchmark" in n)
        # the launcher's rule and wording (as `vllm-wizard bench` says it), plus how to relaunch
        assert bench.not_benchable("run-1", "stopped") in note
        assert "run-1 is stopped" in note and "l on the review launches it again" in note


async def test_g_after_the_run_stopped_under_the_bench_screen_starts_no_sweep(build_app, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    run_dir = tmp_path / "runs" / "run-1"
    run_dir.mkdir(parents=True)
    app = build_app(launcher=StoppingLauncher(run_dir, events=ready_run()))
    seam = CountingBench(tmp_path / "runs")
    app.services.bench = seam
    async with app.run_test(size=(120, 45)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [])
        await pilot.press("l")
        await _until(pilot, lambda: isinstance(app.screen, MonitorScreen))
        monitor = app.screen
        await pilot.pause(0.2)
        await pilot.press("b")
        await _until(pilot, lambda: isinstance(app.screen, BenchScreen))
        screen = app.screen
        await app.launcher.clients["run-1"].stop()  # stopped from elsewhere (`vllm-wizard stop`)
        await _until(pilot, lambda: monitor.model.outcome == "stopped")
        await pilot.press("g")
        await settle(pilot)
        assert not screen.running and screen.sweep is None and seam.sweeps == 0
        status = str(screen.query_one("#bench-status").render())
        assert "run-1 is stopped; benchmark a running run" in status
        assert any("run-1 is stopped" in n for n in _notes(app))


def test_the_rule_admits_running_and_starting_runs_only():
    assert bench.not_benchable("r", "running") is None and bench.not_benchable("r", "starting") is None
    for status in ("finished", "stale", "stopped", "ended"):
        assert bench.not_benchable("r", status) == f"run r is {status}; benchmark a running run (`vllm-wizard status`)"


async def test_a_stopped_run_leaves_stop_restart_and_smoke_out_of_the_footer(build_app, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    run_dir = tmp_path / "runs" / "run-1"
    run_dir.mkdir(parents=True)
    app = build_app(launcher=StoppingLauncher(run_dir, events=ready_run()))
    app.services.bench = CountingBench(tmp_path / "runs")
    async with app.run_test(size=(120, 45)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [])
        await pilot.press("l")
        await _until(pilot, lambda: isinstance(app.screen, MonitorScreen))
        monitor = app.screen
        await pilot.pause(0.2)
        shown = {b.action for _, b, _, _ in monitor.active_bindings.values() if b.show}
        assert {"stop", "restart", "smoke", "bench"} <= shown
        await _stop_run(pilot, app, monitor)
        await settle(pilot)
        shown = {b.action for _, b, _, _ in monitor.active_bindings.values() if b.show}
        assert not {"stop", "restart", "smoke"} & shown and {"bench", "detach"} <= shown
        await pilot.press("s")  # a hidden key does nothing: no second stop to a gone supervisor
        await settle(pilot)
        assert app.launcher.clients["run-1"].commands == ["stop"] and isinstance(app.screen, MonitorScreen)
