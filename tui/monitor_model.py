"""The monitor's state, folded from launcher events (pure, no Textual, testable with canned events).

The launcher client yields (contracts §3) process state changes (``ProcessEvent``: name, state, prev,
pid, ts, detail, cause, tail), log lines (name + lines) and metric snapshots (name + values); they
arrive as dataclasses or as their ``to_dict()`` form with a ``type`` key. :func:`kind_of` tells them
apart by shape, so the monitor keeps working whichever form the client yields.

Bounded memory (docs/architecture.md §4, log panes): each process keeps the last :data:`LOG_TAIL` lines; each
metric the last :data:`HISTORY` samples. The screen drains :attr:`MonitorModel.pending` every
50–100 ms (a batch), never per line.

Transition notes: the supervisor writes ``[wizard] STARTING → READY: …`` into each process log for
every state change; the monitor shows the state change itself (table row, detail), so those lines are
hidden with the launcher's own :data:`~vllm_deploy_wizard.launcher.supervisor.TRANSITION_NOTE_RE` (as the
``launch`` printer does) — one pattern, owned by the writer.

Token rates: the launcher scrapes ``/metrics`` at an interval it chooses (every 5 s once READY) and
sends ``rates`` computed from the two snapshots' ``ts``; the model shows them as sent and derives
none (a snapshot without rates — the first scrape — adds no point to the rate series).

Startup progress: one reading of vLLM's start-up lines, the launcher's
(:class:`~vllm_deploy_wizard.launcher.vllm.StartupProgress`, phases in start order, never going back),
fed per process and reset at each STARTING; :data:`PHASE_LABEL` words them. (A second set of
patterns here once read the engine config dump's ``compilation_config`` as "compiling".)

Log lines (docs/architecture.md §4): each line is made ready for display once, when it arrives
(:func:`display_line`): cut at :data:`DISPLAY_CHARS` with a marker (the full line stays in the log
file and ``vllm-wizard logs``), ``\r`` applied as a terminal would, tabs expanded, control
characters other than ANSI colour codes replaced. A line ending in the launcher's
:data:`~vllm_deploy_wizard.launcher.logs.UPDATE_MARK` (a progress bar's ``\r`` update) is replaced by
the next line of the same process, in the kept tail and in the pane (``pending`` entries say so).

Staleness rules (each one a bug seen live, tested with canned event sequences):

- pid: a STARTING event is emitted *before* the new process is spawned, so it carries no pid or the
  previous process's; the row shows "–" until an event (READY) or :meth:`MonitorModel.refresh`
  (a ``status()`` snapshot) brings the new pid.
- restarts: every STARTING of a process that ran before counts (after BACKOFF/FATAL/EXITED and
  after a requested restart's STOPPING), as the launcher counts them.
- uptime: from the process start time the launcher records (snapshot ``create_time``), else from
  the STARTING event — never from READY.
- health, polls, phase and cause belong to one start: reset at STARTING; a requested stop or restart
  (STOPPING) clears the cause; a snapshot's cause is kept only for a failed state.
- cause, fix: the launcher's (the failure event's ``cause``, with ``fix_args``/``drop_flags``/``fix_env``
  computed from the log); the model never classifies or computes a fix itself.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vllm_deploy_wizard.launcher.causes import CLASSIFY_LINES
from vllm_deploy_wizard.launcher.logs import UPDATE_MARK, overwrite, strip_ansi
from vllm_deploy_wizard.launcher.supervisor import TRANSITION_NOTE_RE
from vllm_deploy_wizard.launcher.vllm import StartupProgress

#: Log lines kept in memory per process (the full log is in the run's log file).
LOG_TAIL = 2000
#: Characters of one log line shown in the monitor; the rest is cut with a marker (:func:`display_line`).
DISPLAY_CHARS = 1000
#: Metrics that count things (shown as integers).
COUNT_METRICS = frozenset({"requests_running", "requests_waiting"})
#: Samples kept per metric for the sparklines.
HISTORY = 120

#: Metric keys shown as sparklines, with their labels; a snapshot may carry any subset.
SPARK_METRICS = {
    "generation_tokens_per_s": "gen tok/s",
    "prompt_tokens_per_s": "prompt tok/s",
    "requests_running": "running",
    "requests_waiting": "waiting",
    "kv_cache_usage": "KV cache %",
}

#: Launcher start-up phase (contracts §3 ``Progress.phase``) → words shown in the monitor.
PHASE_LABEL = {
    "config": "reading config",
    "engine_init": "initializing engine",
    "loading_weights": "loading weights",
    "weights_loaded": "weights loaded",
    "kv_cache": "KV cache / warm-up",
    "api_server": "starting API server",
    # vLLM logged "Application startup complete", but the process is READY only once the supervisor's
    # /health and /v1/models checks pass (launcher/health.py): until then it is still STARTING
    "ready": "API up · checking /health, /v1/models",
}
#: The word of a READY process (the state machine's, set on the READY event, never from a log line).
SERVING = "serving"
#: States in which a process's classified cause is shown.
FAILED_STATES = ("FATAL", "BACKOFF", "EXITED")
#: uvicorn access lines produced by the launcher's own health/metrics polling (hidden in the pane;
#: still in the run's log file).
from vllm_deploy_wizard.launcher.noise import POLL_NOISE  # noqa: E402 - one definition for the TUI and the CLI

#: Snapshot counter → the per-second rate the launcher computes from it (``Metrics.rates``).
RATE_OF_TOTAL = {"prompt_tokens_total": "prompt_tokens_per_s", "generation_tokens_total": "generation_tokens_per_s"}
_LEVEL = re.compile(r"\b(ERROR|CRITICAL|WARNING|WARN|INFO|DEBUG)\b")
#: An escape sequence cut short at the end of a cut line.
_PARTIAL_ESCAPE = re.compile(r"\x1b[^a-zA-Z]*$")
#: Control characters a pane cannot show (ESC kept for colours; \t and \r handled before).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f]")


#: ``line`` without ANSI escape sequences (the launcher's reading, shared with ``vllm-wizard logs``).
plain_text = strip_ansi


def display_line(line: str, limit: int = DISPLAY_CHARS) -> tuple[str, bool]:
    """``(text to show, replaced_by_next)`` for a raw log line (see the module docstring):
    ``replaced_by_next`` is True for a progress update (the line ends in ``UPDATE_MARK``). A line
    longer than ``limit`` characters is cut there and ends with ``… [+N chars: …]``."""
    update = line.endswith(UPDATE_MARK)
    if update:
        line = line[:-1]
    if len(line) > limit:
        more = len(line) - limit
        line = _PARTIAL_ESCAPE.sub("", line[:limit]) + f"\x1b[0m … [+{more:,} chars: full line in `vllm-wizard logs`]"
    if not line.isprintable():  # one C-speed scan; tabs, \r, ANSI and other controls are rare
        if "\t" in line:
            line = line.expandtabs()
        if "\r" in line:
            line = overwrite(line)
        line = _CONTROL.sub("\ufffd", line)
    return line, update


def metric_text(key: str, value: float) -> str:
    """A metric's latest value as shown: counts (:data:`COUNT_METRICS`) as integers, others with one decimal."""
    return f"{value:.0f}" if key in COUNT_METRICS else f"{value:.1f}"


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def kind_of(event: Any) -> str:
    """``snapshot`` (attach), ``event`` (state change), ``log``, ``metrics``, ``progress``,
    ``finished``, ``stats`` (host/GPU) or ``other`` — by declared ``type`` or by shape."""
    declared = _get(event, "type")
    if declared in ("snapshot", "event", "log", "metrics", "progress", "finished", "stats"):
        return declared
    if _get(event, "processes") is not None:
        return "snapshot"
    if _get(event, "state") is not None:
        return "event"
    if _get(event, "lines") is not None or _get(event, "line") is not None:
        return "log"
    if _get(event, "outcome") is not None and _get(event, "survivors") is not None:
        return "finished"
    if _get(event, "gpus") is not None or _get(event, "cpu_percent") is not None:
        return "stats"
    if _get(event, "values") is not None or _get(event, "snapshot") is not None:
        return "metrics"
    if _get(event, "percent", "absent") != "absent" or _get(event, "phase") is not None:
        return "progress"
    return "other"


def state_name(state: Any) -> str:
    """``State.READY`` / ``"READY"`` / ``"ready"`` → ``"READY"``."""
    return str(getattr(state, "value", state)).upper()


def level_of(line: str) -> str:
    """The log level word in ``line`` (``ERROR``, ``WARNING``, ``INFO``, ``DEBUG``) or ``""``."""
    m = _LEVEL.search(line[:200])
    if not m:
        return ""
    word = m.group(1)
    return {"WARN": "WARNING", "CRITICAL": "ERROR"}.get(word, word)


def phase_label(phase: str | None) -> str:
    """Words for a launcher phase id (:data:`PHASE_LABEL`); other text is shown as it is."""
    return PHASE_LABEL.get(phase or "", phase or "")


def spark_series(values: list[float]) -> list[float]:
    """The data to give a Textual ``Sparkline`` for ``values``: Textual draws a single sample as a
    full-height bar, so one sample is doubled (a flat series draws as the lowest block)."""
    return [values[0], values[0]] if len(values) == 1 else list(values)


def detail_text(row: ProcRow) -> str:
    """The Detail cell: in a failed state the classified cause's summary first, then the event detail."""
    summary = (row.cause or {}).get("summary") if row.state in FAILED_STATES else None
    return f"{summary} · {row.detail}" if summary and row.detail else (summary or row.detail)


@dataclass
class ProcRow:
    """One process row: ``state`` name, ``pid``, ``since`` (wall time of the last state change),
    ``started`` (wall time of the last STARTING; the uptime origin),
    ``restarts``, ``ready`` (has been READY since its last start), ``detail``, ``cause`` (classified
    failure dict: ``kind``, ``summary``, ``fix``, optional ``fix_args``), ``phase`` (label),
    ``progress`` (0..1), ``launched`` (has been started at least once), ``start_line`` (index in the
    monitor's log count where the current start's output begins), ``polls`` (health/metrics access
    lines hidden since the current start)."""

    name: str
    state: str = "STOPPED"
    pid: int | None = None
    since: float = field(default_factory=time.time)
    started: float | None = None
    restarts: int = 0
    ready: bool = False
    detail: str = ""
    cause: dict | None = None
    phase: str = ""
    progress: float | None = None
    launched: bool = False
    polls: int = 0
    startup: StartupProgress = field(default_factory=StartupProgress)
    since_start: list[str] = field(default_factory=list)


class MonitorModel:
    """Everything the monitor shows, updated by :meth:`feed`. ``pending`` holds (process, line,
    replace) entries not yet written to the log pane (``replace``: the line takes the place of that
    process's last line, a progress update); the screen takes them with :meth:`drain`. ``changed``
    says the table or side panel need a repaint (any event but log lines, or a start-up phase read
    from a line); log lines alone only fill ``pending``. ``logs``
    holds each process's last :data:`LOG_TAIL` lines as shown (:func:`display_line`)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.procs: dict[str, ProcRow] = {}
        self.logs: dict[str, deque[str]] = {}
        self.pending: deque[tuple[str, str, bool]] = deque(maxlen=LOG_TAIL)  # LOG_TAIL per process
        self.pending_dropped = 0  # pending entries pushed out unseen (the pane re-fills from ``logs``)
        self._updating: set[str] = set()  # processes whose last line a progress update replaces
        self.metrics: dict[str, deque[float]] = {k: deque(maxlen=HISTORY) for k in SPARK_METRICS}
        self.latest_metrics: dict[str, float] = {}
        self.stats: dict[str, Any] = {}
        self.health: dict[str, bool] = {}
        self.argv: dict[str, list[str]] = {}
        self.roles: dict[str, str] = {}  # plan role per process, from the attach snapshot
        self.outcome: str | None = None
        self.polls = 0
        self.transitions_hidden = 0
        self.finish_text = ""
        self.changed = False

    def row(self, name: str) -> ProcRow:
        """The row of ``name`` (created STOPPED on first mention)."""
        if name not in self.procs:
            self.procs[name] = ProcRow(name, since=self.clock())
            self.logs[name] = deque(maxlen=LOG_TAIL)
            # a kept tail's worth per process: one flooding neighbour must not push the selected
            # process's lines out of the batch (the pane would re-fill from the tail each batch)
            self.pending = deque(self.pending, maxlen=LOG_TAIL * len(self.procs))
        return self.procs[name]

    def feed(self, event: Any) -> None:
        """Fold one launcher event into the model."""
        kind = kind_of(event)
        if kind != "log":  # log lines go to ``pending``; they change the table only via the phase
            self.changed = True
        if kind == "snapshot":
            self._snapshot(event)
        elif kind == "progress":
            row = self.row(str(_get(event, "name")))
            if _get(event, "phase") and not row.ready:
                row.phase = phase_label(str(_get(event, "phase")))
            percent = _get(event, "percent")
            if percent is not None:
                row.progress = float(percent) / 100
        elif kind == "finished":
            self.outcome = str(_get(event, "outcome"))
            survivors = _get(event, "survivors") or []
            held = _get(event, "gpu_memory_held")
            self.finish_text = (
                f"Run {self.outcome}"
                + (f"; {len(survivors)} survivor(s) were killed: {survivors}" if survivors else "; no survivors")
                + (f"; GPU memory still held by {sorted(held)}" if held else "")
                + (f" — {_get(event, 'reason')}" if _get(event, "reason") else "")
            )
        elif kind == "event":
            self._state(event)
        elif kind == "log":
            name = str(_get(event, "name", "?"))
            lines = _get(event, "lines")
            if lines is None:
                lines = [_get(event, "line")]
            for line in lines:
                self.add_line(name, str(line))
        elif kind == "metrics":
            values = _get(event, "values") or _get(event, "snapshot") or {}
            if not isinstance(values, dict):
                values = {k: getattr(values, k) for k in (*SPARK_METRICS, *RATE_OF_TOTAL, "ts") if hasattr(values, k)}
            rates = {k: v for k, v in (_get(event, "rates") or {}).items() if v is not None}
            values = {**{k: v for k, v in values.items() if k not in RATE_OF_TOTAL.values()}, **rates}
            if isinstance(values.get("kv_cache_usage"), (int, float)) and values["kv_cache_usage"] <= 1:
                values["kv_cache_usage"] = values["kv_cache_usage"] * 100  # launcher reports 0–1
            for key, value in values.items():
                if isinstance(value, (int, float)):
                    self.latest_metrics[key] = float(value)
                    if key in self.metrics:
                        self.metrics[key].append(float(value))
            healthy = _get(event, "healthy")
            if healthy is not None and self.row(str(_get(event, "name", "?"))).state in ("STARTING", "READY"):
                self.health[str(_get(event, "name", "?"))] = bool(healthy)
        elif kind == "stats":
            self.stats = dict(event) if isinstance(event, dict) else dict(vars(event))

    def refresh(self, snap: Any) -> None:
        """Take pids, restart counts and start times from a ``status()`` snapshot (no log lines):
        the pid of a process in STARTING is only known from there (see module docstring)."""
        for proc in _get(snap, "processes") or []:
            name = str(proc.get("name"))
            if name not in self.procs:
                continue
            row = self.procs[name]
            if state_name(proc.get("state", "")) == row.state:
                row.pid = proc.get("pid") or row.pid
                row.restarts = max(row.restarts, int(proc.get("restarts") or 0))
                created = proc.get("create_time") or proc.get("leader_create_time")
                if row.state in ("STARTING", "READY") and isinstance(created, (int, float)):
                    row.started = float(created)
                self.changed = True

    def _snapshot(self, snap: Any) -> None:
        """Attach: one row per recorded process (state, pid, since, restarts, cause, progress), tails.
        Uptime starts at the process's recorded ``create_time`` (not at its last state change)."""
        for proc in _get(snap, "processes") or []:
            row = self.row(str(proc.get("name")))
            row.state = state_name(proc.get("state", "STOPPED"))
            row.pid = proc.get("pid")
            row.since = float(proc.get("since") or self.clock())
            created = proc.get("create_time") or proc.get("leader_create_time")
            live = row.state in ("STARTING", "READY")
            row.started = (float(created) if isinstance(created, (int, float)) else row.since) if live else None
            row.restarts = int(proc.get("restarts") or 0)
            row.launched = row.state != "STOPPED" or row.restarts > 0 or proc.get("last_rc") is not None
            row.ready = row.state == "READY"
            row.cause = (proc.get("cause") or None) if row.state in FAILED_STATES else None
            prog = proc.get("progress") or {}
            if prog.get("phase") and not row.ready:
                row.phase = phase_label(str(prog["phase"]))
            if prog.get("percent") is not None:
                row.progress = float(prog["percent"]) / 100
            if proc.get("argv"):
                self.argv[row.name] = list(proc["argv"])
            if proc.get("role"):
                self.roles[row.name] = str(proc["role"])
        for name, lines in (_get(snap, "tail") or {}).items():
            for line in lines:
                self.add_line(str(name), str(line))

    def _state(self, event: Any) -> None:
        row = self.row(str(_get(event, "name")))
        new = state_name(_get(event, "state"))
        pid = _get(event, "pid")
        if new == "STARTING":
            if row.launched:
                row.restarts += 1
            # emitted before the spawn: no pid, or the previous process's (see module docstring)
            pid = pid if pid != row.pid else None
            row.pid = None
            row.launched, row.ready, row.cause, row.progress, row.phase = True, False, None, None, ""
            row.startup, row.since_start, row.polls = StartupProgress(), [], 0
            self._updating.discard(row.name)
            self.health.pop(row.name, None)
        if new == "READY":
            row.ready, row.phase, row.progress = True, SERVING, None
        else:  # the Ready column says whether it serves now, not whether it ever did
            row.ready = False
        if new == "STOPPING":
            row.cause = None  # a requested stop/restart: the last failure is no longer the story
        if new not in ("STARTING", "READY"):
            self.health.pop(row.name, None)
        row.state = new
        if new not in ("STARTING", "READY", "STOPPING"):
            row.pid = None  # as state.json: a settled or backing-off process has no pid
        elif pid is not None:
            row.pid = pid
        ts = _get(event, "ts")
        row.since = float(ts) if isinstance(ts, (int, float)) and ts > 1e9 else self.clock()
        if new == "STARTING" or (new == "READY" and row.started is None):
            row.started = row.since
        row.detail = str(_get(event, "detail", "") or "")
        recent = set(row.since_start[-200:])
        for line in _get(event, "tail", []) or []:
            if str(line) not in recent:  # the live stream usually delivered them already
                self.add_line(row.name, str(line))
        cause = _get(event, "cause")
        if cause:
            row.cause = dict(cause) if isinstance(cause, dict) else dict(vars(cause))

    def add_line(self, name: str, line: str) -> None:
        """Append a log line of ``name`` (bounded) and update its startup phase. Successful
        health/metrics poll access lines are counted in ``polls`` and not kept; the supervisor's
        ``[wizard] A → B:`` transition notes are counted in ``transitions_hidden`` and not kept."""
        row = self.row(name)
        shown, update = display_line(line)
        if '"GET /' in shown and POLL_NOISE.search(shown):  # the substring gates the regex (floods)
            self.polls += 1
            row.polls += 1
            return
        if shown.startswith("[wizard] ") and TRANSITION_NOTE_RE.match(shown):  # the table shows the change
            self.transitions_hidden += 1
            return
        replace = name in self._updating and bool(self.logs[name])
        if replace:
            self.logs[name][-1] = shown
        else:
            self.logs[name].append(shown)
        if update:
            self._updating.add(name)
        else:
            self._updating.discard(name)
        if len(self.pending) == self.pending.maxlen:
            self.pending_dropped += 1
        self.pending.append((name, shown, replace))
        row.since_start.append(line)
        if len(row.since_start) > 2 * CLASSIFY_LINES:
            del row.since_start[:-CLASSIFY_LINES]
        if not row.ready and row.startup.feed(shown):
            self.changed = True
            row.phase = phase_label(row.startup.phase)
            if row.startup.percent is not None and row.startup.phase == "loading_weights":
                row.progress = row.startup.percent / 100

    def drain(self) -> list[tuple[str, str, bool]]:
        """Take every pending (process, line, replace) entry (the next UI batch)."""
        out = list(self.pending)
        self.pending.clear()
        self.pending_dropped = 0
        return out

    def failure(self) -> ProcRow | None:
        """The first process in FATAL/BACKOFF/EXITED with a classified cause, if any."""
        for row in self.procs.values():
            if row.cause and row.state in FAILED_STATES:
                return row
        return None


def uptime_text(row: ProcRow, now: float | None = None) -> str:
    """``1h02m`` / ``3m05s`` / ``12s`` since the process last started (live states only): its
    recorded process start time after an attach, its STARTING event otherwise."""
    if row.state not in ("STARTING", "READY"):
        return "–"
    secs = max(0, int((now or time.time()) - (row.started if row.started is not None else row.since)))
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


def api_key_hint(key: str | None) -> str:
    """``API key …abcd`` (its last 4 characters; the whole key for none shorter than 12), or
    ``no API key`` — for the monitor header."""
    if not key:
        return "no API key"
    return f"API key …{key[-4:]}" if len(key) >= 12 else "API key set"
