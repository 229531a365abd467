"""The benchmark screen (``b`` in the monitor): a concurrency sweep of ``vllm bench serve`` against the
live run, with live progress, plots, an SVG export and a comparison with an earlier sweep of the same
model (docs/benchmark.md §1, launcher/bench.py).

The person sets the time budget and the request lengths, ``g`` starts (``c`` stops), and as each step
finishes four plots fill in (textual-plotext, the maintained plotext widget for Textual): output and
request throughput vs concurrency, TTFT p50/p99 and ITL p50/p99 vs concurrency. ``v`` overlays the
next earlier sweep of the same model (run id and time in the legend), ``e`` saves the screen as SVG
into the sweep's folder beside its ``sweep.json``/``sweep.csv``. The sweep runs in a thread worker;
its events come back through ``call_from_thread``.

The benchmark functions come from ``app.services.bench`` (a test seam: an object with ``run_sweep``,
``list_sweeps`` and ``runs_root``), by default :mod:`vllm_deploy_wizard.launcher.bench` itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Label, ProgressBar, Static
from textual_plotext import PlotextPlot

#: The plots: (widget id, title, [(StepResult field, legend)], y label).
PLOTS: tuple[tuple[str, str, tuple[tuple[str, str], ...], str], ...] = (
    ("plot-output", "Output throughput", (("output_throughput", "output"),), "tok/s"),
    ("plot-requests", "Request throughput", (("request_throughput", "requests"),), "req/s"),
    ("plot-ttft", "TTFT", (("ttft_p50_ms", "p50"), ("ttft_p99_ms", "p99")), "ms"),
    ("plot-itl", "ITL", (("itl_p50_ms", "p50"), ("itl_p99_ms", "p99")), "ms"),
)
#: The settings a person edits: (input id, label, SweepConfig field, default).
FIELDS = (("bench-budget", "budget s", "budget_s", "300"), ("bench-input-len", "input tokens", "input_len", "128"),
          ("bench-output-len", "output tokens", "output_len", "64"),
          ("bench-max-conc", "max concurrency", "max_concurrency", "256"))


def bench_api(app: Any) -> Any:
    """The benchmark functions: ``app.services.bench`` when set, else :mod:`vllm_deploy_wizard.launcher.bench`."""
    services = getattr(app, "services", None)
    api = getattr(services, "bench", None) if services is not None else None
    if api is None:
        from vllm_deploy_wizard.launcher import bench as api
    return api


class BenchScreen(Screen):
    """Benchmark of run ``run_id`` (folder ``run_dir``) against ``target`` (a launcher.bench.BenchTarget).
    ``refusal`` (the monitor's :meth:`~vllm_deploy_wizard.tui.screen_monitor.MonitorScreen.bench_refusal`):
    asked at each ``g``; a text means the run has stopped meanwhile and no sweep starts."""

    BINDINGS = [
        Binding("g", "start", "Start"),
        Binding("c", "cancel", "Stop sweep"),
        Binding("v", "compare", "Compare"),
        Binding("e", "export", "Export SVG"),
        Binding("escape", "close", "Back"),
    ]
    DEFAULT_CSS = """
    BenchScreen #bench-settings { height: 3; }
    BenchScreen #bench-settings Label { padding: 1 1 0 1; }
    BenchScreen #bench-settings Input { width: 12; }
    BenchScreen #bench-status { height: auto; max-height: 3; }
    BenchScreen #bench-plots { grid-size: 2 2; height: 1fr; min-height: 22; }
    BenchScreen #bench-table { height: auto; max-height: 6; }
    """

    def __init__(self, run_id: str, run_dir: Path, target: Any,
                 refusal: Callable[[], str | None] | None = None) -> None:
        super().__init__()
        self.refusal = refusal
        self.run_id, self.run_dir, self.target = run_id, Path(run_dir), target
        self.sub_title = f"benchmark · run {run_id} · {target.model}"
        self.steps: list[Any] = []
        self.sweep: Any = None
        self.running = False
        self.error = ""
        self.compare_with: Any = None
        self._compare_index = -1
        self._cancel = threading.Event()
        self.exported: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="bench-body"):  # at 80×24 the plots keep a readable height and the body scrolls
            with Horizontal(id="bench-settings"):
                for wid, label, _field, default in FIELDS:
                    yield Label(label)
                    yield Input(default, id=wid, type="number")
            yield Static(self._idle_text(), id="bench-status")
            yield ProgressBar(total=1, show_eta=False, id="bench-progress")
            with Grid(id="bench-plots"):
                for wid, *_ in PLOTS:
                    yield PlotextPlot(id=wid)
            yield DataTable(id="bench-table", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#bench-table", DataTable)
        from vllm_deploy_wizard.launcher.bench import TABLE_HEADERS

        for key, field in (("c", "concurrency"), ("ok", "completed"), ("fail", "failed"), ("req", "request_throughput"),
                           ("out", "output_throughput"), ("ttft50", "ttft_p50_ms"), ("ttft99", "ttft_p99_ms"),
                           ("itl50", "itl_p50_ms"), ("itl99", "itl_p99_ms")):
            table.add_column(TABLE_HEADERS[field], key=key)
        table.focus()  # g/c/v/e are keys of the screen; an Input in focus would take them as text
        self._paint_plots()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in a setting starts the sweep."""
        event.stop()
        self.action_start()

    def _idle_text(self) -> str:
        return (f"{self.target.model} at {self.target.base_url} · `{self.target.vllm} bench serve`, random dataset, "
                "concurrency 1, 2, 4 … until output throughput rises < 5 % or the budget is spent. g starts.")

    # ------------------------------------------------------------------ running
    def config(self) -> Any:
        """The sweep config from the inputs; raises ``ValueError`` naming the field when one is not valid."""
        from vllm_deploy_wizard.common.errors import LaunchError
        from vllm_deploy_wizard.launcher.bench import SweepConfig

        values: dict[str, Any] = {}
        for wid, label, fld, _default in FIELDS:
            text = self.query_one(f"#{wid}", Input).value.strip()
            try:
                values[fld] = float(text) if fld == "budget_s" else int(text)
            except ValueError:
                wanted = "number" if fld == "budget_s" else "whole number"
                raise ValueError(f"{label}: {text!r} is not a {wanted}") from None
        try:
            return SweepConfig(**values)
        except LaunchError as exc:
            raise ValueError(str(exc)) from None

    def action_start(self) -> None:
        """Start the sweep with the settings in the inputs (nothing when one is already running, or when
        ``refusal`` says the run has stopped)."""
        if self.running:
            self.notify("A sweep is already running (c stops it).", severity="warning")
            return
        why = self.refusal() if self.refusal is not None else None
        if why:
            self._status(f"✗ {why}")
            self.notify(f"Cannot benchmark: {why}", severity="warning", timeout=10)
            return
        try:
            config = self.config()
        except ValueError as exc:
            self._status(f"✗ {exc}")
            self.notify(str(exc), severity="error")
            return
        self.steps, self.sweep, self.error, self.running = [], None, "", True
        self._cancel = threading.Event()
        self.query_one("#bench-table", DataTable).clear()
        self._status(f"starting the sweep (budget {config.budget_s:g} s) …")
        self._run(config)

    @work(thread=True, exclusive=True, group="bench", exit_on_error=False)
    def _run(self, config: Any) -> None:
        api = bench_api(self.app)
        try:
            sweep = api.run_sweep(self.target, config, self.run_dir,
                                  on_event=lambda ev: self.app.call_from_thread(self.on_sweep_event, ev),
                                  cancel=self._cancel)
        except Exception as exc:  # noqa: BLE001 — LaunchError with vLLM's output; shown, never a crash
            self.app.call_from_thread(self._failed, str(exc))
            return
        self.app.call_from_thread(self._finished, sweep)

    def on_sweep_event(self, ev: Any) -> None:
        """Fold one :class:`~vllm_deploy_wizard.launcher.bench.SweepEvent` into the screen."""
        bar = self.query_one("#bench-progress", ProgressBar)
        bar.update(total=100, progress=round(ev.overall() * 100, 1))  # the sweep's, finished steps counted
        step = f"step {ev.finished + 1} of ≤ {ev.planned} · " if ev.planned else ""
        if ev.kind == "step":
            self._status(f"{step}concurrency {ev.concurrency}: 0/{ev.total} requests · {ev.elapsed_s:.0f} s")
        elif ev.kind == "progress":
            self._status(f"{step}concurrency {ev.concurrency}: {ev.done}/{ev.total} requests · {ev.elapsed_s:.0f} s")
        elif ev.kind == "result" and ev.step is not None:
            self.steps.append(ev.step)
            self._add_row(ev.step)
            self._paint_plots()

    def _finished(self, sweep: Any) -> None:
        self.running, self.sweep = False, sweep
        self.steps = list(sweep.steps)
        self._status(f"✓ done: {sweep.stop_reason}. Saved {sweep.path}/sweep.json and sweep.csv · "
                     "e exports SVG · v compares")
        self._paint_plots()

    def _failed(self, text: str) -> None:
        self.running, self.error = False, text
        self._status(f"✗ {text}")
        self.notify(text.splitlines()[0], severity="error", timeout=10)

    def action_cancel(self) -> None:
        """Stop the running sweep after killing its current step (finished steps are kept and saved)."""
        if self.running:
            self._cancel.set()
            self._status("stopping the sweep …")

    # ------------------------------------------------------------------ painting
    def _status(self, text: str) -> None:
        self.query_one("#bench-status", Static).update(text)

    def _add_row(self, s: Any) -> None:
        from vllm_deploy_wizard.launcher.bench import format_ms as ms

        self.query_one("#bench-table", DataTable).add_row(
            str(s.concurrency), str(s.completed), str(s.failed), f"{s.request_throughput:.2f}",
            f"{s.output_throughput:.1f}", ms(s.ttft_p50_ms), ms(s.ttft_p99_ms), ms(s.itl_p50_ms), ms(s.itl_p99_ms))

    def series(self) -> dict[str, list[tuple[str, list[int], list[float]]]]:
        """``{plot id: [(legend, concurrencies, values)]}`` as painted: this sweep's steps, then the compared one's."""
        out: dict[str, list[tuple[str, list[int], list[float]]]] = {}
        sets = [("this", self.steps)]
        if self.compare_with is not None:
            sets.append((self.compare_with.label, list(self.compare_with.steps)))
        for wid, _title, fields, _unit in PLOTS:
            lines = []
            for name, steps in sets:
                for fld, legend in fields:
                    pts = [(s.concurrency, getattr(s, fld)) for s in steps if getattr(s, fld) is not None]
                    if pts:
                        lines.append((f"{legend} {name}" if len(sets) > 1 else legend, [p[0] for p in pts],
                                      [float(p[1]) for p in pts]))
            out[wid] = lines
        return out

    def _paint_plots(self) -> None:
        data = self.series()
        for wid, title, _fields, unit in PLOTS:
            widget = self.query_one(f"#{wid}", PlotextPlot)
            plt = widget.plt
            plt.clear_data()
            plt.title(title)
            plt.xlabel("concurrency")
            plt.ylabel(unit)
            ticks: list[float] = sorted({x for _legend, xs, _ys in data[wid] for x in xs})
            if ticks:
                plt.xticks(ticks)  # the concurrencies measured, not 1.0 2.8 4.5
            for legend, xs, ys in data[wid]:
                plt.plot(xs, ys, label=legend, marker="braille")
            widget.refresh()

    # ------------------------------------------------------------------ compare / export
    def action_compare(self) -> None:
        """Overlay the next earlier sweep of the same model (cycles; after the last, none)."""
        api = bench_api(self.app)
        mine = getattr(self.sweep, "path", None)
        others = [s for s in api.list_sweeps(api.runs_root(), self.target.model) if s.path != mine]
        if not others:
            self.notify(f"No earlier sweep of {self.target.model} to compare with.", severity="warning")
            return
        self._compare_index += 1
        if self._compare_index >= len(others):
            self._compare_index, self.compare_with = -1, None
            self.notify("Comparison off.")
        else:
            self.compare_with = others[self._compare_index]
            self.notify(f"Comparing with {self.compare_with.label}")
        self._paint_plots()

    def action_export(self) -> str | None:
        """Save the screen as SVG in the sweep's folder (or the run's bench/ folder before one); returns the path."""
        folder = Path(self.sweep.path) if self.sweep is not None and self.sweep.path else self.run_dir / "bench"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = self.app.save_screenshot(filename="bench.svg", path=str(folder))
        except OSError as exc:
            self.notify(f"cannot write the SVG into {folder}: {exc}", severity="error")
            return None
        self.exported = path
        self.notify(f"Saved {path}")
        return path

    def action_close(self) -> None:
        """Back to the monitor; a running sweep is stopped first."""
        self._cancel.set()
        self.app.pop_screen()
