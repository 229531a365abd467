"""The rows of the monitor's process table, for one run or for every node of a cluster launch (pure:
no Textual; testable with canned node answers and a fake clock).

One run: one row per process of the monitored run, folded from its live events
(:class:`~vllm_deploy_wizard.tui.monitor_model.MonitorModel`), cells by :func:`process_cells`.

The head of a cluster launch (``launch PLAN --all-nodes`` recorded this run as its head,
:func:`~vllm_deploy_wizard.launcher.engines.ssh.head_cluster`): the rows are grouped by node, in the
cluster's node order — a *node row* (its label, its run's status, how many of its processes are
ready, where it runs) followed by that node's processes, indented. This machine's processes are the
live rows of one run; every other node's come from asking that node with
:func:`~vllm_deploy_wizard.launcher.engines.ssh.node_status`, the one function ``status --all-nodes``
asks nodes with, so the monitor and the command show the same states, pids and ports.

Asking (:meth:`ClusterRows.due`): each node on its own, :data:`NODE_POLL_S` seconds after its last
answer, never twice at once — ssh is slow and a node that does not answer (up to the launcher's
``SSH_TIMEOUT_S``) holds back only its own rows. The screen does the asking in thread workers. An
ask that has taken two periods adds ``no answer for Ns`` to the node row (one period is a normal
ssh round trip plus a Python start on a busy machine).

A node that cannot be asked: its node row's state is ``UNKNOWN`` and its detail ``unreachable:``
with ssh's own error; the processes it last reported stay listed, marked stale with the age of
that answer (a process list that vanished on a network blip would read as "nothing runs there").

Row keys: a process of this machine keeps its name (the key the rest of the monitor uses: log
pane, restart, smoke); a process of another node is ``LABEL/NAME`` and a node row ``LABEL/``
(node labels never hold ``/``: the launcher's safe-label rule).

Logs of another node's process live on that machine: the pane shows where and the command that
reads them (:func:`logs_command`, ``vllm-wizard logs --node LABEL PROCESS``), and the screen
fetches the last :data:`TAIL_LINES` lines once per selection (the same command, run there).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vllm_deploy_wizard.tui.monitor_model import (
    FAILED_STATES,
    ProcRow,
    detail_text,
    phase_label,
    state_name,
    uptime_text,
)

#: Seconds from a node's last answer to the next time it is asked.
NODE_POLL_S = 5.0
#: Log lines of another node's process fetched when its row is selected.
TAIL_LINES = 200
#: The state cell of a node row whose node could not be asked.
UNKNOWN = "UNKNOWN"
#: Indent of a process row under its node row (cluster view).
INDENT = "  "


#: The process table's fixed columns (key, label, width in cells); Detail takes what is left.
FIXED_COLUMNS = (("name", "Process", 16), ("state", "State", 8), ("pid", "PID", 8), ("uptime", "Uptime", 7),
                 ("restarts", "Restarts", 8), ("ready", "Ready", 5))


def detail_width(screen_width: int) -> int:
    """Width of the table's Detail column for a terminal ``screen_width`` cells wide: what the fixed
    columns (and one cell of padding each side of every column) leave, between 10 and 40 — at 80
    columns the table fits without a horizontal scrollbar (a scrollbar thumb would show as a stray
    ``▌``); the full detail is also in the failure box."""
    used = sum(w for _, _, w in FIXED_COLUMNS) + 2 * (len(FIXED_COLUMNS) + 1)
    return max(10, min(40, screen_width - used))


def logs_command(label: str, process: str | None = None) -> str:
    """The command that prints the logs of ``process`` (every process when None) on node ``label``
    of the newest cluster launch."""
    return f"vllm-wizard logs --node {label}" + (f" {process}" if process else "")


def age_text(secs: float) -> str:
    """``12s`` / ``3m05s`` / ``1h02m`` for a duration of ``secs`` seconds (negative reads 0s)."""
    secs = max(0, int(secs))
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


def process_cells(row: ProcRow, now: float, indent: str = "") -> dict[str, str]:
    """The table cells of one process row (keys: ``name``, ``state``, ``pid``, ``uptime``,
    ``restarts``, ``ready``, ``detail``), as plain strings; ``now`` is the wall clock (s) the uptime
    is counted to; ``indent`` goes before the name (a process under its node row)."""
    return {
        "name": indent + row.name,
        "state": row.state,
        "pid": str(row.pid or "–"),
        "uptime": uptime_text(row, now),
        "restarts": str(row.restarts),
        "ready": "✓" if row.ready else "",
        "detail": detail_text(row),
    }


def reported_row(proc: Mapping[str, Any], now: float) -> ProcRow:
    """A :class:`ProcRow` from a process of a node's ``status --json`` answer (the plan-state dict:
    ``name``, ``state``, ``pid``, ``ports``, ``restarts``, ``since``, ``create_time``, ``cause``,
    ``progress``). Its detail is the start-up phase while it starts, then ``ports=…`` as ``status``
    prints them; the cause only in a failed state (as for this machine's rows)."""
    state = state_name(proc.get("state") or "STOPPED")
    live = state in ("STARTING", "READY")
    since = proc.get("since")
    created = proc.get("create_time")
    row = ProcRow(str(proc.get("name")), state=state, pid=proc.get("pid") if live or state == "STOPPING" else None,
                  since=float(since) if isinstance(since, (int, float)) else now,
                  restarts=int(proc.get("restarts") or 0), ready=state == "READY")
    if live:
        row.started = float(created) if isinstance(created, (int, float)) else row.since
    row.cause = (proc.get("cause") or None) if state in FAILED_STATES else None
    ports = ",".join(str(p) for p in proc.get("ports") or [])
    progress = proc.get("progress") or {}
    phase = phase_label(progress.get("phase")) if state == "STARTING" and progress.get("phase") else ""
    if phase and progress.get("percent") is not None:
        phase += f" {float(progress['percent']):.0f}%"
    row.detail = " · ".join(x for x in (phase, f"ports={ports or '-'}") if x)
    return row


@dataclass(frozen=True)
class TableRow:
    """One row of the process table: its ``key`` (see the module docstring), ``cells`` (as
    :func:`process_cells`), ``kind`` (``process``: this machine's; ``node``: a node row;
    ``remote``: another node's process) and ``stale`` (from an answer older than the node's last
    failed ask)."""

    key: str
    cells: dict[str, str]
    kind: str = "process"
    stale: bool = False


def local_rows(procs: Mapping[str, ProcRow], now: float, indent: str = "") -> list[TableRow]:
    """The rows of the monitored run's own processes, in the order they were first seen."""
    return [TableRow(name, process_cells(row, now, indent)) for name, row in procs.items()]


@dataclass
class NodeView:
    """What the monitor knows of one node: ``label``, ssh ``dest`` (None = this machine), ``run_id``;
    ``asked`` (clock time of the ask in flight, None when none), ``answered`` (of the last answer),
    ``seen`` (of the last answer that told its run), ``run`` (that answer's run row: ``status``,
    ``outcome``, ``processes``), ``error`` (the last answer's error; None when it told the run)."""

    label: str
    dest: str | None
    run_id: str | None
    asked: float | None = None
    answered: float | None = None
    seen: float | None = None
    run: dict[str, Any] | None = None
    error: str | None = None

    @property
    def where(self) -> str:
        """``this machine`` or the ssh destination."""
        return self.dest or "this machine"


class ClusterRows:
    """The process table of a cluster head: node rows and every node's processes.

    ``nodes``: the cluster's nodes in order, each with ``label``, ``dest`` (None for this machine,
    exactly one) and ``run_id`` (the launcher's ``NodeRun``); ``clock``: wall time in seconds;
    ``period``: :data:`NODE_POLL_S`. Raises ValueError when no node is this machine's."""

    def __init__(self, nodes: Iterable[Any], clock: Callable[[], float] = time.time,
                 period: float = NODE_POLL_S) -> None:
        self.clock = clock
        self.period = period
        self.nodes = [NodeView(n.label, n.dest, n.run_id) for n in nodes]
        local = [n for n in self.nodes if n.dest is None]
        if not local:
            raise ValueError("a cluster launch has one node on this machine (dest None); none here")
        self.local = local[0]
        self._by_label = {n.label: n for n in self.nodes}

    @property
    def local_key(self) -> str:
        """The key of this machine's node row."""
        return f"{self.local.label}/"

    def node(self, label: str) -> NodeView:
        """The node called ``label`` (KeyError for another)."""
        return self._by_label[label]

    def due(self) -> list[str]:
        """Labels of the other nodes to ask now: none in flight, never asked or last answered at
        least ``period`` s ago."""
        now = self.clock()
        return [n.label for n in self.nodes if n.dest is not None and n.asked is None
                and (n.answered is None or now - n.answered >= self.period)]

    def asking(self, label: str) -> None:
        """Record that ``label`` is being asked now."""
        self.node(label).asked = self.clock()

    def answer(self, label: str, reply: Mapping[str, Any]) -> None:
        """Fold a :func:`~vllm_deploy_wizard.launcher.engines.ssh.node_status` reply for ``label``
        (``ok``, ``error``, ``run``) in; the ask in flight is over."""
        n = self.node(label)
        n.asked, n.answered = None, self.clock()
        if reply.get("ok") and reply.get("run") is not None:
            n.run, n.error, n.seen = dict(reply["run"]), None, n.answered
        else:
            n.error = str(reply.get("error") or "no answer")

    def where(self, key: str) -> tuple[NodeView, str | None] | None:
        """For a node row's key: ``(node, None)``; another node's process: ``(node, name)``; None for
        a key of this machine's processes (or no row at all)."""
        label, sep, name = key.partition("/")
        if not sep or label not in self._by_label or self._by_label[label] is self.local:
            return None
        return self._by_label[label], name or None

    def rows(self, procs: Mapping[str, ProcRow], local_status: str = "running") -> list[TableRow]:
        """Every row in table order: per node its node row, then its processes — this machine's from
        ``procs`` (the live model), the others' from their last answer. ``local_status`` is this
        machine's run status word (``running``, or its outcome once it ended)."""
        now = self.clock()
        out: list[TableRow] = []
        for n in self.nodes:
            if n is self.local:
                mine = local_rows(procs, now, INDENT)
                ready = sum(1 for r in mine if r.cells["ready"])
                out.append(self._node_row(n, local_status, f"{ready}/{len(mine)}",
                                          f"this machine · run {n.run_id}"))
                out += mine
                continue
            reported = [reported_row(p, now) for p in (n.run or {}).get("processes") or []]
            out.append(self._node_row(n, *self._node_state(n, reported, now)))
            stale = n.error is not None
            for row in reported:
                cells = process_cells(row, now, INDENT)
                if stale and n.seen is not None:
                    cells["detail"] = f"as of {age_text(now - n.seen)} ago · {cells['detail']}"
                out.append(TableRow(f"{n.label}/{row.name}", cells, "remote", stale))
        return out

    def _node_state(self, n: NodeView, reported: list[ProcRow], now: float) -> tuple[str, str, str]:
        """(state, ready, detail) cells of another node's row."""
        ready = f"{sum(1 for r in reported if r.ready)}/{len(reported)}" if n.run is not None else ""
        slow = n.asked is not None and now - n.asked >= 2 * self.period  # the ask in flight is taking long
        waiting = f" · no answer for {age_text(now - n.asked)}" if slow and n.asked is not None else ""
        if n.error is not None:
            return UNKNOWN, ready, f"unreachable: {n.error}{waiting}"
        if n.run is None:
            waited = f" ({age_text(now - n.asked)})" if n.asked is not None else ""
            return "asking…", "", f"asking {n.where} over ssh{waited}"
        outcome = f" ({n.run['outcome']})" if n.run.get("outcome") else ""
        return str(n.run.get("status") or "?"), ready, f"{n.where} · run {n.run_id}{outcome}{waiting}"

    @staticmethod
    def _node_row(n: NodeView, state: str, ready: str, detail: str) -> TableRow:
        cells = {"name": n.label, "state": state, "pid": "", "uptime": "", "restarts": "", "ready": ready,
                 "detail": detail}
        return TableRow(f"{n.label}/", cells, "node")

    def pane_lines(self, key: str) -> list[str]:
        """What the log pane shows for a node row or another node's process ``key`` (see :meth:`where`):
        for this machine's node row, that its processes follow and the cluster commands; for another node's row,
        where it runs, its last answer or why it cannot be asked, and the commands that read it; for
        a process, where its log is and the command that prints it (the screen adds the tail it
        fetched). [] for other keys."""
        if key == self.local_key:
            n = self.local
            return [f"node {n.label} · this machine · run {n.run_id}",
                    "  its processes are the rows below it: select one for its live log",
                    "  every node: vllm-wizard status --all-nodes; stop them all: vllm-wizard stop --all-nodes"]
        found = self.where(key)
        if found is None:
            return []
        n, name = found
        now = self.clock()
        asked = (f"last answer {age_text(now - n.answered)} ago" if n.answered is not None else "not answered yet")
        asked += f"; asked again every {self.period:g} s" + (" (asking now)" if n.asked is not None else "")
        if name is None:
            head = f"node {n.label} · {n.where} · run {n.run_id}"
            if n.error is not None:
                lines = [f"{head} · cannot be asked", f"  unreachable: {n.error}", f"  {asked}"]
            elif n.run is None:
                lines = [f"{head} · asking over ssh …", f"  {asked}"]
            else:
                procs = n.run.get("processes") or []
                lines = [f"{head} · {n.run.get('status')}", f"  {asked}",
                         *(f"  {p.get('name')}: {state_name(p.get('state'))}" for p in procs)]
            return [*lines, f"  logs: {logs_command(n.label)} [PROCESS]; all nodes: vllm-wizard status --all-nodes"]
        return [f"{name} runs on {n.label} ({n.where}), run {n.run_id}; its log is there",
                f"  read it: {logs_command(n.label, name)} [-n N] · select the row again to fetch anew"]
