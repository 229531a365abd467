"""The monitor's state, folded from launcher events (pure, no Textual, testable with canned events).

The launcher client yields (contracts §3) process state changes (``ProcessEvent``: name, state, prev,
pid, ts, detail, cause, tail), log lines (name + lines) and metric snapshots (name + values); they
arrive as dataclasses or as their ``to_dict()`` form with a ``type`` key. :func:`kind_of` tells them
apart by shape, so the monitor keeps working whichever form the client yields.

Bounded memory (DESIGN.md, log panes): each process keeps the last :data:`LOG_TAIL` lines; each
metric the last :data:`HISTORY` samples. The screen drains :attr:`MonitorModel.pending` every
50–100 ms (a batch), never per line.

Transition notes: the supervisor writes ``[wizard] STARTING → READY: …`` into each process log for
every state change; the monitor shows the state change itself (table row, detail), so those lines are
hidden with the launcher's own :data:`~vllm_wizard.launcher.supervisor.TRANSITION_NOTE_RE` (as the
``launch`` printer does) — one pattern, owned by the writer.

Token rates: the launcher scrapes ``/metrics`` at an interval it chooses (every 5 s once READY) and
sends ``rates`` computed from the two snapshots' ``ts``. When an event carries totals but no rate
(first scrape after an attach, an older client), the model derives tokens/s itself from the previous
snapshot's totals and timestamp — never from an assumed interval.

Startup progress: vLLM logs "Loading safetensors checkpoint shards: 40% | 2/5" while loading weights
and "Application startup complete." when the API is up; :func:`startup_phase` reads them.
"""

from __future__ import annotations

import re
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from vllm_wizard.launcher.supervisor import TRANSITION_NOTE_RE

#: Log lines kept in memory per process (the full log is in the run's log file).
LOG_TAIL = 2000
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

_SHARDS = re.compile(r"Loading (?:safetensors )?checkpoint shards:\s*(\d+)%")
_PHASES = (
    (re.compile(r"Application startup complete"), "serving"),
    (re.compile(r"Capturing CUDA graph|CUDA graph|compil", re.I), "compiling / graphs"),
    (re.compile(r"KV cache|GPU KV cache size|num_gpu_blocks", re.I), "allocating KV cache"),
    (re.compile(r"Loading weights|checkpoint shards|Loading model", re.I), "loading weights"),
    (re.compile(r"Starting vLLM API server|Initializing|vLLM API server version", re.I), "initializing"),
)
#: uvicorn access lines produced by the launcher's own health/metrics polling (hidden in the pane;
#: still in the run's log file).
POLL_NOISE = re.compile(r'"GET /(?:health|metrics|healthcheck) HTTP/[\d.]+" 200')
#: Snapshot counter → the per-second rate derived from it (:meth:`MonitorModel.feed`).
RATE_OF_TOTAL = {"prompt_tokens_total": "prompt_tokens_per_s", "generation_tokens_total": "generation_tokens_per_s"}
_LEVEL = re.compile(r"\b(ERROR|CRITICAL|WARNING|WARN|INFO|DEBUG)\b")


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


def startup_phase(line: str) -> tuple[str | None, float | None]:
    """(phase, weight-loading fraction 0..1) read from one vLLM log line; Nones when it says neither."""
    m = _SHARDS.search(line)
    if m:
        return "loading weights", int(m.group(1)) / 100
    for pattern, phase in _PHASES:
        if pattern.search(line):
            return phase, None
    return None, None


@dataclass
class ProcRow:
    """One process row: ``state`` name, ``pid``, ``since`` (wall time of the last state change),
    ``started`` (wall time of the last STARTING; the uptime origin),
    ``restarts``, ``ready`` (has been READY since its last start), ``detail``, ``cause`` (classified
    failure dict: ``kind``, ``summary``, ``fix``, optional ``fix_args``), ``phase``, ``progress``."""

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


class MonitorModel:
    """Everything the monitor shows, updated by :meth:`feed`. ``pending`` holds (process, line)
    pairs not yet written to the log pane; the screen takes them with :meth:`drain`."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.procs: dict[str, ProcRow] = {}
        self.logs: dict[str, deque[str]] = {}
        self.pending: deque[tuple[str, str]] = deque(maxlen=LOG_TAIL)
        self.metrics: dict[str, deque[float]] = {k: deque(maxlen=HISTORY) for k in SPARK_METRICS}
        self.latest_metrics: dict[str, float] = {}
        self.stats: dict[str, Any] = {}
        self.health: dict[str, bool] = {}
        self.argv: dict[str, list[str]] = {}
        self.outcome: str | None = None
        self.polls = 0
        self.transitions_hidden = 0
        self._last_totals: dict[str, tuple[float, dict[str, float]]] = {}
        self.finish_text = ""
        self.changed = False

    def row(self, name: str) -> ProcRow:
        """The row of ``name`` (created STOPPED on first mention)."""
        if name not in self.procs:
            self.procs[name] = ProcRow(name, since=self.clock())
            self.logs[name] = deque(maxlen=LOG_TAIL)
        return self.procs[name]

    def feed(self, event: Any) -> None:
        """Fold one launcher event into the model."""
        kind = kind_of(event)
        self.changed = True
        if kind == "snapshot":
            self._snapshot(event)
        elif kind == "progress":
            row = self.row(str(_get(event, "name")))
            if _get(event, "phase"):
                row.phase = str(_get(event, "phase"))
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
            values = {**values, **self._derived_rates(str(_get(event, "name", "?")), values, rates), **rates}
            if isinstance(values.get("kv_cache_usage"), (int, float)) and values["kv_cache_usage"] <= 1:
                values["kv_cache_usage"] = values["kv_cache_usage"] * 100  # launcher reports 0–1
            for key, value in values.items():
                if isinstance(value, (int, float)):
                    self.latest_metrics[key] = float(value)
                    if key in self.metrics:
                        self.metrics[key].append(float(value))
            healthy = _get(event, "healthy")
            if healthy is not None:
                self.health[str(_get(event, "name", "?"))] = bool(healthy)
        elif kind == "stats":
            self.stats = dict(event) if isinstance(event, dict) else dict(vars(event))

    def _derived_rates(self, name: str, values: dict, rates: dict) -> dict[str, float]:
        """Tokens/s of process ``name`` from this snapshot's totals and ``ts`` against the previous
        one's, for each rate the launcher did not send (``rates``). A counter that went down
        (server restarted) or a non-increasing ``ts`` gives no rate. Units: tokens per second."""
        ts = values.get("ts")
        totals = {k: float(v) for k, v in values.items() if k in RATE_OF_TOTAL and isinstance(v, (int, float))}
        if not isinstance(ts, (int, float)) or not totals:
            return {}
        out: dict[str, float] = {}
        prev = self._last_totals.get(name)
        if prev is not None and ts > prev[0]:
            dt = float(ts) - prev[0]
            for key, total in totals.items():
                rate_key = RATE_OF_TOTAL[key]
                before = prev[1].get(key)
                if rate_key not in rates and before is not None and total >= before:
                    out[rate_key] = (total - before) / dt
        self._last_totals[name] = (float(ts), totals)
        return out

    def _snapshot(self, snap: Any) -> None:
        """Attach: one row per recorded process (state, pid, since, restarts, cause, progress), tails."""
        for proc in _get(snap, "processes") or []:
            row = self.row(str(proc.get("name")))
            row.state = state_name(proc.get("state", "STOPPED"))
            row.pid = proc.get("pid")
            row.since = float(proc.get("since") or self.clock())
            row.started = row.since if row.state in ("STARTING", "READY") else None
            row.restarts = int(proc.get("restarts") or 0)
            row.ready = row.state == "READY"
            row.cause = proc.get("cause") or None
            prog = proc.get("progress") or {}
            if prog.get("phase"):
                row.phase = str(prog["phase"])
            if prog.get("percent") is not None:
                row.progress = float(prog["percent"]) / 100
            if proc.get("argv"):
                self.argv[row.name] = list(proc["argv"])
        for name, lines in (_get(snap, "tail") or {}).items():
            for line in lines:
                self.add_line(str(name), str(line))

    def _state(self, event: Any) -> None:
        row = self.row(str(_get(event, "name")))
        new = state_name(_get(event, "state"))
        if new == "STARTING" and row.state in ("BACKOFF", "EXITED", "FATAL"):
            row.restarts += 1
        if new == "STARTING":
            row.ready, row.cause, row.progress = False, None, None
        if new == "READY":
            row.ready, row.phase, row.progress = True, "serving", None
        row.state = new
        row.pid = _get(event, "pid", row.pid)
        ts = _get(event, "ts")
        row.since = float(ts) if isinstance(ts, (int, float)) and ts > 1e9 else self.clock()
        if new == "STARTING" or (new == "READY" and row.started is None):
            row.started = row.since
        row.detail = str(_get(event, "detail", "") or "")
        cause = _get(event, "cause")
        if cause:
            row.cause = dict(cause) if isinstance(cause, dict) else dict(vars(cause))
        for line in _get(event, "tail", []) or []:
            self.add_line(row.name, str(line))

    def add_line(self, name: str, line: str) -> None:
        """Append a log line of ``name`` (bounded) and update its startup phase. Successful
        health/metrics poll access lines are counted in ``polls`` and not kept; the supervisor's
        ``[wizard] A → B:`` transition notes are counted in ``transitions_hidden`` and not kept."""
        row = self.row(name)
        if POLL_NOISE.search(line):
            self.polls += 1
            return
        if TRANSITION_NOTE_RE.match(line):  # the state change is shown by the table already
            self.transitions_hidden += 1
            return
        self.logs[name].append(line)
        self.pending.append((name, line))
        if not row.ready:
            phase, progress = startup_phase(line)
            if phase:
                row.phase = phase
            if progress is not None:
                row.progress = progress

    def drain(self) -> list[tuple[str, str]]:
        """Take every pending (process, line) pair (the next UI batch)."""
        out = list(self.pending)
        self.pending.clear()
        return out

    def failure(self) -> ProcRow | None:
        """The first process in FATAL/BACKOFF/EXITED with a classified cause, if any."""
        for row in self.procs.values():
            if row.cause and row.state in ("FATAL", "BACKOFF", "EXITED"):
                return row
        return None


def uptime_text(row: ProcRow, now: float | None = None) -> str:
    """``1h02m`` / ``3m05s`` / ``12s`` since the process last started (live states only; after an
    attach, since its last recorded state change — the snapshot has no start time)."""
    if row.state not in ("STARTING", "READY"):
        return "–"
    secs = max(0, int((now or time.time()) - (row.started if row.started is not None else row.since)))
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"
