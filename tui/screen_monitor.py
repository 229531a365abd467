"""Step 5 — monitor a run: process table, live log, startup progress, health/metrics sparklines,
host/GPU stats, classified failure with a one-key relaunch, and stop / restart / detach / smoke keys.

Event flow (docs/architecture.md §3 style 2, log panes): an async worker folds the launcher client's
``events()`` into a :class:`~vllm_deploy_wizard.tui.monitor_model.MonitorModel` (no widget touched); a
:data:`BATCH_S` timer drains its pending lines into the :class:`~vllm_deploy_wizard.tui.log_pane.LogPane`
(which renders only the rows on screen, never lays out) and repaints the table/side panel only when
something changed. Keys during a flood (``python bench/bench_monitor_flood.py``) cost what a frame
repaints, so nothing repaints or lays out what did not change: side-panel text (tui/static_text.py),
the process table on focus moves (tui/steady_table.py), and ``/`` opens the search box on its own
layer over the footer, held meanwhile and not rebuilt (tui/steady_footer.py).

The header names the run, the endpoint clients talk to (the smoke request's target) and whether it
wants an API key (the last 4 characters of the key as a hint, never the key).

A STARTING event comes before the spawn (no pid); while a process is STARTING without a pid the
screen asks the client's ``status()`` at most every :data:`PID_REFRESH_S` for it
(:meth:`MonitorModel.refresh`).

Detach (``d``) and quit (``q``; not in the footer, which already lists the app's ``^q``) leave the run
alive (its supervisor is a daemon) and say so with the commands to come back or stop it
(:func:`keeps_running_text`); ``vllm-wizard attach`` or a new ``vllm-wizard`` re-opens it
(:class:`AttachPrompt`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import Reactive
from textual.widget import Widget
from textual.widgets import DataTable, Header, Input, Label, ProgressBar, Sparkline, Static

from vllm_deploy_wizard.tui.host_stats import PERIOD_S, stats_text
from vllm_deploy_wizard.tui.log_pane import LogPane
from vllm_deploy_wizard.tui.monitor_model import (
    LOG_TAIL,
    SPARK_METRICS,
    MonitorModel,
    api_key_hint,
    level_of,
    metric_text,
    plain_text,
    spark_series,
)
from vllm_deploy_wizard.tui.monitor_nodes import watch_cluster
from vllm_deploy_wizard.tui.process_rows import FIXED_COLUMNS, detail_width, local_rows
from vllm_deploy_wizard.tui.process_table import paint_rows
from vllm_deploy_wizard.tui.run_offers import keeps_running_text
from vllm_deploy_wizard.tui.static_text import update_text
from vllm_deploy_wizard.tui.steady_footer import SteadyFooter
from vllm_deploy_wizard.tui.steady_table import SteadyTable
from vllm_deploy_wizard.tui.wizard_screen import WizardScreen

#: Rich styles of log levels in the log pane.
LEVEL_STYLE = {"ERROR": "bold red", "WARNING": "yellow", "INFO": "", "DEBUG": "dim"}
#: UI batch period, seconds: new log lines and state changes are painted at most this often (a
#: flood repaints the pane's visible rows once per batch; keys are handled in between).
BATCH_S = 0.1
#: A batch of at least this many pending lines is a flood: the log pane then takes new lines at most
#: every :data:`FLOOD_REPAINT_S` (its visible rows all change each time; nobody reads 10,000
#: lines/s, and the CPU a repaint costs is what a flood would otherwise multiply).
FLOOD_LINES = 500
FLOOD_REPAINT_S = 0.25  #: Least seconds between log pane repaints during a flood.
CONSUME_SLICE_S = 0.004  #: Longest the event worker folds events without yielding to the event loop (s).
#: Least seconds between ``status()`` calls that look for the pid of a STARTING process.
PID_REFRESH_S = 1.0


def level_style(plain: str) -> str:
    """The log pane's base style of a line (its level colour, :data:`LEVEL_STYLE`)."""
    return LEVEL_STYLE.get(level_of(plain), "")


#: The monitor's actions in the command palette (action, title, help): the palette lists every action
#: (F1 says so), also those whose key the footer has no room for at 80 columns.
MONITOR_ACTIONS: tuple[tuple[str, str, str], ...] = (
    ("smoke", "Smoke test (m)", "Send one short completion to the served endpoint; the answer lands in the log"),
    ("bench", "Benchmark (b)", "Sweep `vllm bench serve` over concurrency 1, 2, 4 … against the endpoint; plots"),
    ("restart", "Restart process (r)", "Restart the selected process (asks first)"),
    ("stop", "Stop run (s)", "Stop every process of the run (asks first)"),
    ("detach", "Detach (d)", "Leave the run running and go back"),
    ("relaunch_fix", "Fix and relaunch (x)", "Apply the failure's suggested flag change and launch again"),
    ("follow", "Follow log (f)", "Toggle following the end of the log"),
    ("search", "Search log (/)", "Filter the log pane by a string (enter applies; escape closes the box, "
                                 "then clears the filter)"),
)


class MonitorScreen(WizardScreen):
    """Monitor of run ``run_id``; the launcher client comes from ``app.launcher.client(run_id)``."""

    #: Textual's ``Screen.focused``, without its whole-screen repaint on each focus move (``/``,
    #: ``escape``): the widgets whose look depends on focus repaint themselves.
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    BINDINGS = [
        # the footer shows the five that matter with ^q Quit and f1 Help in 80 columns (76 wide);
        # follow and search are in F1 and the palette (MONITOR_ACTIONS). x is not in the footer: it
        # works only after a failure with a suggested fix, and then the failure box says
        # "press x to relaunch with: …" — so the always-useful b (benchmark) gets the room (issue #20)
        Binding("s", "stop", "Stop"),
        Binding("r", "restart", "Restart"),
        Binding("d", "detach", "Detach"),
        Binding("m", "smoke", "Smoke"),
        Binding("b", "bench", "Bench"),  # "Benchmark (b)" in the palette; the short word fits 80 columns
        Binding("x", "relaunch_fix", "Fix+run", show=False),
        Binding("f", "follow", "Follow", show=False),
        Binding("slash", "search", "Search", show=False),
        Binding("escape", "back", "Close search / clear filter / detach", show=False),
        Binding("q", "quit_keep_running", "Quit (run goes on)", show=False),
    ]

    def __init__(self, run_id: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.sub_title = f"run {run_id}"  # before mount: the Header reads it when it composes
        self.model = MonitorModel()  # clock set on mount (app.clock)
        self.client: Any = None  # LauncherPort.client(run_id): events(), status(), stop(), restart(name)
        self.selected: str | None = None
        self.follow = True
        self.search = ""
        self.ended = False
        self._pid_asked = 0.0
        self._prev_shown = False  # the pane's last line is the selected process's last line
        self._endpoint_shown = False
        self._lines_at = 0.0  # monotonic time the log pane last took new lines
        self._cells: dict[str, dict] = {}  # process → the table cells last painted
        self._painted: dict[str, object] = {}  # side-panel widget id → the value last painted
        self.nodes: Any = None  # monitor_nodes.NodeWatch once the run is known to head a cluster launch
        self._placed = False  # the cluster table's cursor was put on this machine's first process
        self._keys_live = True  # the run was live when the footer's keys were last checked (check_action)

    def compose(self) -> ComposeResult:
        yield Header()
        yield SteadyTable(id="procs", cursor_type="row")
        with Horizontal(id="mon-body"):
            yield LogPane(LOG_TAIL, level_style, id="log")
            with Vertical(id="mon-side"):
                yield Static("", id="phase")
                yield ProgressBar(total=100, show_eta=False, id="weights")
                for key, label in SPARK_METRICS.items():
                    yield Label(label, classes="spark-label", id=f"lbl-{key}")
                    yield Sparkline([], id=f"spark-{key}", classes="spark")
                yield Static("", id="stats")
        yield Static("", id="failure")
        yield Input(placeholder="search log (enter; empty clears)", id="log-search", classes="hidden")
        yield SteadyFooter()

    def on_mount(self) -> None:
        self.model.clock = getattr(self.app, "clock", time.time)
        table = self.query_one("#procs", DataTable)
        # fixed widths: the table must not re-layout as states change (STARTING → READY)
        for key, label, width in (*FIXED_COLUMNS, ("detail", "Detail", detail_width(self.app.size.width))):
            table.add_column(label, key=key, width=width)
        self.query_one("#log").border_title = "log"
        self.query_one("#mon-side").border_title = "health & metrics"
        self.set_interval(BATCH_S, self.flush)
        self.set_interval(1.0, self._tick_uptime)
        if getattr(self.app, "stats_sampler", None) is not None:
            self._sample_host()
            self.set_interval(PERIOD_S, self._sample_host)
        launcher = self.app.launcher
        if launcher is None:
            self.query_one("#failure", Static).update("No launcher available.")
            return
        try:
            self.client = launcher.client(self.run_id)
        except Exception as exc:  # noqa: BLE001 — LaunchError: no such run / supervisor gone
            self.ended = True  # painted by the next batch, like a finished run's summary
            self.model.finish_text = (f"✗ Cannot attach to run {self.run_id}: {exc}\n"
                                      "  escape/d goes back to the wizard; `vllm-wizard status` lists runs.")
            self.model.changed = True
            return
        self.consume()
        watch_cluster(self)  # the head of a `launch --all-nodes`: every node's processes in the table

    @work(exclusive=True, group="monitor-events", exit_on_error=False)
    async def consume(self) -> None:
        """Fold the client's events into the model until the stream ends (run stopped).

        Under a flood the socket always has the next event buffered, so ``readline`` returns without
        suspending and the loop would run on while keys wait; it yields to the event loop every
        :data:`CONSUME_SLICE_S` of folding instead."""
        import asyncio

        sliced = time.perf_counter()
        try:
            async for event in self.client.events():
                self.model.feed(event)
                if time.perf_counter() - sliced >= CONSUME_SLICE_S:
                    await asyncio.sleep(0)  # keys and repaints get their turn
                    sliced = time.perf_counter()
        except Exception as exc:  # noqa: BLE001 — supervisor gone: say so, keep what we have
            self.model.add_line("monitor", f"ERROR event stream ended: {type(exc).__name__}: {exc}")
        self.ended = True
        self.model.changed = True

    # ------------------------------------------------------------------ painting (timer handlers)
    def flush(self) -> None:
        """One UI batch: pending log lines into the pane, then the header, table and side panel if
        the model's state changed (a flood of lines repaints only the pane)."""
        pending = len(self.model.pending)
        if pending and (pending < FLOOD_LINES or time.monotonic() - self._lines_at >= FLOOD_REPAINT_S):
            self._lines_at = time.monotonic()
            if self.model.pending_dropped:  # some never reached the pane: re-fill it from the tail
                dropped = self.model.drain()
                if self.selected is None:
                    self.selected = dropped[0][0]
                self.repaint_log()
            else:
                self._flush_lines()
        if not self.model.changed:
            return
        self.model.changed = False
        if self._run_live() != self._keys_live:  # the run ended: s/r/m leave the footer (check_action)
            self._keys_live = self._run_live()
            self.refresh_bindings()
        self._paint_header()
        self._paint_table()
        self._paint_side()
        self._ask_pids()

    def _flush_lines(self) -> None:
        batch = []
        for name, line, replace in self.model.drain():
            if self.selected is None:
                self.selected = name
            if name != self.selected:
                continue
            match = not self.search or self.search in plain_text(line)
            if match:
                batch.append((line, replace and self._prev_shown))
            self._prev_shown = match
        if batch:
            self.query_one("#log", LogPane).write_lines(batch)

    def _ask_pids(self) -> None:
        """Start a ``status()`` look-up when a STARTING process has no pid yet (rate-limited)."""
        now = time.monotonic()
        if self.client is None or self.ended or now - self._pid_asked < PID_REFRESH_S:
            return
        if any(r.state == "STARTING" and r.pid is None for r in self.model.procs.values()):
            self._pid_asked = now
            self._refresh_pids()

    @work(exclusive=True, group="monitor-pids", exit_on_error=False)
    async def _refresh_pids(self) -> None:
        try:
            snap = await self.client.status()
        except Exception:  # noqa: BLE001 — a client without status() or a busy socket: try again later
            return
        self.model.refresh(snap)

    def _paint_header(self) -> None:
        """Once the served process is known: the endpoint URL and the API-key hint in the header."""
        if self._endpoint_shown or not self.model.procs or self.client is None:
            return
        from vllm_deploy_wizard.tui.smoke import SmokeTarget

        self._endpoint_shown = True
        try:
            target = self.smoke_target()
        except Exception:  # noqa: BLE001 — the header is a hint; the smoke key reports problems
            return
        if isinstance(target, SmokeTarget):
            self.sub_title = f"{self.run_id} · {target.base_url}/v1 · {api_key_hint(target.api_key)}"

    def _paint_table(self) -> None:
        """The table's rows: the run's processes, or every node's when it heads a cluster launch
        (tui/process_rows.py, painted by tui/process_table.py); a rebuild keeps the selection."""
        table = self.query_one("#procs", DataTable)
        status = self.run_status()
        rows = (self.nodes.rows.rows(self.model.procs, status) if self.nodes
                else local_rows(self.model.procs, self.model.clock()))
        # a cluster's table places its cursor itself: on the selection after a rebuild, and once on
        # this machine's first process (not its node row, row 0) when that process is first shown
        quiet = self.prevent(DataTable.RowHighlighted) if self.nodes is not None else None
        if paint_rows(table, rows, self._cells, quiet) or (self.nodes is not None and not self._placed):
            if self.nodes is not None and self.selected in (None, self.nodes.rows.local_key) and self.model.procs:
                self.selected = next(iter(self.model.procs))
                self.repaint_log()
            self._placed = bool(self.model.procs)
            keys = [r.key for r in rows]
            if self.selected in keys:
                table.move_cursor(row=keys.index(self.selected))
        if self.selected is None and self.model.procs:
            self.selected = next(iter(self.model.procs))

    @work(thread=True, exclusive=True, group="host-stats", exit_on_error=False)
    def _sample_host(self) -> None:
        """CPU/RAM (and per-GPU where NVML answers) into the model; painted by the next batch."""
        sampler = self.app.stats_sampler
        if sampler is not None:  # on_mount schedules this only with a sampler
            self.model.feed(sampler())

    def _tick_uptime(self) -> None:
        self.model.changed = True

    def _paint_side(self) -> None:
        row = self.model.procs.get(self.selected) if self.selected else None
        phase = self.query_one("#phase", Static)
        bar = self.query_one("#weights", ProgressBar)
        if row is not None:
            live = row.state in ("STARTING", "READY")
            health = self.model.health.get(row.name)
            htxt = "" if health is None or not live else (" · health ok" if health else " · health failing")
            if row.polls and live:
                htxt += f" · {row.polls} polls ok"
            shown = row.phase if live and row.phase else row.state.lower()
            if self._changed("phase", text := f"{row.name}: {shown}{htxt}"):
                update_text(phase, text)
            progress = 100 * (row.progress if row.progress is not None else (1.0 if row.ready else 0.0))
            if self._changed("weights", progress):
                bar.update(progress=progress)
        elif self.nodes is not None and self.nodes.owns(self.selected):  # a node row or another node's process
            if self._changed("phase", text := self.nodes.where_text(self.selected)):
                update_text(phase, text)
        for key in SPARK_METRICS:
            data = spark_series(list(self.model.metrics[key]))
            if self._changed(f"spark-{key}", data):
                self.query_one(f"#spark-{key}", Sparkline).data = data
            latest = self.model.latest_metrics.get(key)
            label = f"{SPARK_METRICS[key]}: {metric_text(key, latest)}" if latest is not None else SPARK_METRICS[key]
            if self._changed(f"lbl-{key}", label):
                update_text(self.query_one(f"#lbl-{key}", Label), label)
        stats = stats_text(self.model.stats)
        if self._changed("stats", stats):
            update_text(self.query_one("#stats", Static), stats)
        failure = self.model.failure()
        if not self._changed("failure", (failure and (failure.name, failure.state, repr(failure.cause), failure.detail),
                                         self.model.finish_text, self.ended)):
            return
        box = self.query_one("#failure", Static)
        if failure is not None:
            cause = failure.cause or {}
            fix = cause.get("fix") or ""
            fix_args = self.fix_args()
            kind, summary = cause.get("kind", "failure"), cause.get("summary", failure.detail)
            box.update(Text.assemble(
                (f"✗ {failure.name} {failure.state}: {kind} — {summary}", "bold red"),
                (f"\n  fix: {fix}" if fix else "", "yellow"),
                ("\n  press x to relaunch with: " + " ".join(fix_args) if fix_args else "", "bold"),
                ("\n  press x to relaunch without: " + " ".join(cause.get("drop_flags") or [])
                 if cause.get("drop_flags") and not fix_args else "", "bold"),
                ("\n  to get a root cause, relaunch with: " + " ".join(f"{k}={v}" for k, v in cause["fix_env"].items())
                 if cause.get("fix_env") else "", "yellow"),
            ))
        elif self.model.finish_text:
            box.update(self.model.finish_text)
        elif self.ended:
            box.update("Run ended (event stream closed).")
        else:
            box.update("")

    def _changed(self, key: str, value: object) -> bool:
        """Whether ``value`` differs from what widget ``key`` last showed (and remember it)."""
        if self._painted.get(key, self) == value:
            return False
        self._painted[key] = value
        return True

    def fix_args(self) -> list[str] | None:
        """The flags the current failure's fix appends (computed by the launcher), or None."""
        from vllm_deploy_wizard.tui.fixes import flag_fix

        failure = self.model.failure()
        return flag_fix(failure.cause) if failure is not None else None

    # ------------------------------------------------------------------ actions
    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row != event.data_table.cursor_row:
            return  # posted before the table was rebuilt: that row is elsewhere now
        name = str(event.row_key.value)
        if name != self.selected:
            self.selected = name
            if self.nodes is not None:
                self.nodes.selected(name)  # another node's process: fetch its log tail
            self.repaint_log()
            self.query_one("#log", LogPane).repaint_in_next_frame()  # with the table's cursor, not a frame later
            self._paint_side()  # the side panel names the selection: the same frame too, not the next batch
            self.model.changed = True

    def repaint_log(self) -> None:
        """Fill the log pane anew for the selected row: the process's kept tail (search applied), or
        for another node's row what monitor_nodes says about it."""
        log = self.query_one("#log", LogPane)
        log.clear()
        log.border_title = f"log · {self.selected}" + (f" · /{self.search}" if self.search else "")
        log.set_highlight(self.search)
        shown: Iterable[str] = self.model.logs.get(self.selected, []) if self.selected is not None else []
        if self.nodes is not None and self.nodes.owns(self.selected):
            shown = self.nodes.pane_lines(self.selected)
        lines = [(line, False) for line in shown
                 if not self.search or self.search in plain_text(line)]
        self._prev_shown = bool(lines) or not self.search
        if self.search and not lines:
            lines = [(f"\x1b[2;3mno line of {self.selected}'s log contains {self.search!r} yet; new lines that do "
                      "will show here (/ then enter on an empty box clears the search)\x1b[0m", False)]
        log.write_lines(lines)

    def action_follow(self) -> None:
        """Toggle following the log's end."""
        self.follow = not self.follow
        self.query_one("#log", LogPane).follow = self.follow
        self.notify("Following log" if self.follow else "Log follow paused")

    def action_search(self) -> None:
        """Open the log search box over the (held) footer: its own layer, nothing else moves."""
        box = self.query_one("#log-search", Input)
        self.query_one(SteadyFooter).hold()
        box.remove_class("hidden")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "log-search":
            self.search = event.value.strip()
            self._close_search()
            self.repaint_log()

    def _close_search(self) -> None:
        """Hide the log search box and give the keys back to the process table."""
        self.query_one("#log-search", Input).add_class("hidden")
        self.query_one("#procs", DataTable).focus()
        self.query_one(SteadyFooter).release()

    def action_back(self) -> None:
        """escape: close the log search box when it is open (the filter stays); else clear the log
        filter when one is set (one escape each); else detach."""
        box = self.query_one("#log-search", Input)
        if not box.has_class("hidden"):
            self._close_search()
        elif self.search:
            self.search, box.value = "", ""
            self.repaint_log()
            self.notify("Log search cleared (escape again detaches)")
        else:
            self.action_detach()

    def action_stop(self) -> None:
        """Ask "Stop the run (vllm, router …)? y/n", then stop the whole run (SIGTERM, wait, SIGKILL
        the tree — launcher policy). One stray key must not drop a live server."""
        if self.client is None:
            return
        names = ", ".join(self.model.procs) or self.run_id
        others = "\nThe other nodes keep running; `vllm-wizard stop --all-nodes` stops them all." if self.nodes else ""
        self._confirm(f"Stop the run ({names})?{others}", "stop", self._do_stop)

    def action_restart(self) -> None:
        """Ask "Restart <process>? y/n", then restart the selected process."""
        if self.client is None or not self.selected:
            return
        if self.selected not in self.model.procs:  # a node row or another node's process
            self.notify("r restarts this machine's processes; another node's: `vllm-wizard restart` on that node",
                        severity="warning")
            return
        self._confirm(f"Restart {self.selected}?", "restart", self._do_restart)

    def _confirm(self, question: str, yes: str, then) -> None:
        from vllm_deploy_wizard.tui.prompts import ConfirmPrompt

        def answer(ok: bool | None) -> None:
            if ok:
                self.run_worker(then(), group="monitor-control", exit_on_error=False)

        self.app.push_screen(ConfirmPrompt(question, yes=yes, no="cancel"), answer)

    async def _do_stop(self) -> None:
        self.notify("Stopping run…")
        try:
            await self.client.stop()
        except Exception as exc:  # noqa: BLE001 — LaunchError: supervisor gone
            self.notify(f"Stop failed: {exc}", severity="error", timeout=10)

    async def _do_restart(self) -> None:
        self.notify(f"Restarting {self.selected}…")
        try:
            await self.client.restart(self.selected)
        except Exception as exc:  # noqa: BLE001 — LaunchError: unknown process, supervisor gone
            self.notify(f"Restart failed: {exc}", severity="error", timeout=10)

    def _run_live(self) -> bool:
        return not self.ended and self.model.outcome is None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide (and disable) the keys that cannot work once the run is over (stopped, ended, supervisor
        gone): s stop, r restart, m smoke. b stays: it says why it will not benchmark (:meth:`bench_refusal`)."""
        if action in ("stop", "restart", "smoke") and not self._run_live():
            return False
        return True

    def run_status(self) -> str:
        """The run's status as the launcher names run statuses: ``running`` while the event stream is open
        and no outcome came, else the outcome (``stopped``, ``failed`` …), or ``ended`` when the stream
        closed without one (supervisor gone)."""
        return "running" if self._run_live() else (self.model.outcome or "ended")

    def bench_refusal(self) -> str | None:
        """Why ``b``/``g`` must not start a sweep now (the launcher's rule,
        :func:`~vllm_deploy_wizard.launcher.bench.not_benchable`, plus how to relaunch), or ``None``."""
        from vllm_deploy_wizard.launcher.bench import not_benchable

        why = not_benchable(self.run_id, self.run_status())
        if why is None:
            return None
        return f"{why}. To relaunch it: escape, then l on the review launches it again (or `vllm-wizard launch PLAN`)."

    def action_detach(self) -> None:
        """Leave the run running and go back (or exit when the monitor is the only screen), saying
        how to come back and how to stop it."""
        self.workers.cancel_group(self, "monitor-events")
        text = keeps_running_text(self.run_id) if self._run_live() else f"run {self.run_id} has ended"
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()
            self.app.notify(text, title="Detached", timeout=10)
        else:
            self.app.exit(message=text)

    def action_quit_keep_running(self) -> None:
        """Quit the wizard; a live run goes on and the terminal is told how to re-attach or stop it."""
        self.workers.cancel_group(self, "monitor-events")
        self.app.exit(message=keeps_running_text(self.run_id) if self._run_live() else None)

    def action_smoke(self) -> None:
        """Send a short completion to the served endpoint; the answer lands in the log pane."""
        self._smoke()

    def smoke_target(self):
        """Where ``m`` sends its request (:func:`~vllm_deploy_wizard.tui.smoke.find_target`): the plan this
        wizard launched as this run (placeholders filled with the launch values), else the run's
        ``spec.json``, else the live snapshot's processes; a ``str`` saying why when none serves."""
        from vllm_deploy_wizard.common import placeholders
        from vllm_deploy_wizard.tui.smoke import SmokeTarget, find_target, read_spec

        plan = (getattr(self.app, "launched_plans", None) or {}).get(self.run_id)
        info = getattr(self.client, "info", None)
        spec = read_spec(getattr(info, "run_dir", None))
        live = [{"name": n, "argv": self.model.argv.get(n) or [], "role": self.model.roles.get(n), "pid": r.pid}
                for n, r in self.model.procs.items()]
        target = find_target(plan, spec, live, {n: r.pid for n, r in self.model.procs.items()})
        if isinstance(target, SmokeTarget) and plan is not None:
            values = {k: v for k, v in (getattr(self.app, "launch_values", {}) or {}).items() if v}
            key = placeholders.fill(target.api_key, values) if target.api_key else None
            base_url = placeholders.fill(target.base_url, values)
            target = SmokeTarget(base_url, target.model, key, target.source, target.note)
        return target

    @work(exclusive=True, group="smoke", exit_on_error=False)
    async def _smoke(self) -> None:
        from vllm_deploy_wizard.tui.smoke import smoke_request

        target = self.smoke_target()
        pane = self.selected if self.selected in self.model.procs else next(iter(self.model.procs), "smoke")
        if isinstance(target, str):  # in the log pane too: a toast alone is easy to miss
            self.last_smoke_error = target
            self.model.add_line(pane, f"SMOKE ERROR {target}")
            self.model.changed = True
            self.notify(target, severity="error", timeout=10)
            return
        if target.note:
            self.model.add_line(pane, f"SMOKE WARNING {target.note}")
            self.model.changed = True
        auth = " (with the API key)" if target.api_key else ""
        self.notify(f"Smoke request to {target.base_url}{auth} …")
        result = await smoke_request(target.base_url, target.model, api_key=target.api_key)
        self.last_smoke = result
        style = "SMOKE OK" if result.ok else "SMOKE ERROR"
        self.model.add_line(pane,
                            f"{style} {result.latency_s * 1000:.0f} ms {result.url}: {result.text!r}")
        self.model.changed = True
        self.notify(f"{'✓' if result.ok else '✗'} {result.latency_s * 1000:.0f} ms: {result.text[:80]}",
                    severity="information" if result.ok else "error")

    def action_bench(self) -> None:
        """Open the benchmark screen (tui/screen_bench.py) against this run's live endpoint; a run that has
        stopped (or whose supervisor is gone) is refused with a notice instead (:meth:`bench_refusal`)."""
        from vllm_deploy_wizard.tui.screen_bench import BenchScreen, bench_api

        refusal = self.bench_refusal()
        if refusal:
            self.notify(f"Cannot benchmark: {refusal}", severity="warning", timeout=10)
            return
        run_dir = getattr(getattr(self.client, "info", None), "run_dir", None)
        try:
            if run_dir is None:
                raise ValueError(f"run {self.run_id} has no run directory to benchmark")
            target = bench_api(self.app).target_from_run(run_dir, {n: r.pid for n, r in self.model.procs.items()})
        except Exception as exc:  # noqa: BLE001 — LaunchError: no serve process / no vllm executable
            self.notify(f"Cannot benchmark: {exc}", severity="error", timeout=10)
            return
        self.app.push_screen(BenchScreen(self.run_id, run_dir, target, refusal=self.bench_refusal))

    async def action_relaunch_fix(self) -> None:
        """Stop the run, apply the failure's fix to the advanced args (tui/fixes.py) and launch again."""
        from vllm_deploy_wizard.tui.fixes import apply_fix

        failure = self.model.failure()
        selection = dict(self.app.selection)
        new_args, stuck = apply_fix(list(selection.get("advanced_args") or []), failure.cause if failure else None)
        if new_args is None:
            self.notify("No flag fix to apply.", severity="warning")
            return
        if stuck:
            self.notify(f"{', '.join(stuck)} comes from the recipe and cannot be removed here.", severity="warning")
        if self.client is not None:
            from vllm_deploy_wizard.common.errors import LaunchError

            try:
                await self.client.stop()
            except LaunchError as exc:  # a FATAL run's supervisor has usually finished already
                if "finished" not in str(exc):
                    self.notify(f"Could not stop the run, not relaunching: {exc}", severity="error")
                    return
        selection["advanced_args"] = new_args
        self.app.set_selection(selection)
        from vllm_deploy_wizard.tui.screen_review import ReviewScreen

        self.workers.cancel_group(self, "monitor-events")
        review = ReviewScreen()
        self.app.switch_screen(review)
        review.call_after_refresh(review.action_launch)  # x = fix AND relaunch
