"""The monitor's view of the other nodes of a cluster launch: finding out whether the monitored run
heads one, asking each other node for its run, and fetching another node's process log — all in
thread workers, never on the event loop (ssh takes seconds; a dead node up to the launcher's
``SSH_TIMEOUT_S``). The rows themselves are :class:`~vllm_deploy_wizard.tui.process_rows.ClusterRows`.

Through the launcher port (``app.launcher``; optional methods, looked up with ``getattr`` so a
port without them monitors one run as before): ``cluster_nodes(run_id)`` → the cluster's nodes or
None, ``node_status(run_id, label)`` → that node's ``status`` reply, ``node_log_tail(run_id, label,
process, lines)`` → its last log lines (raises LaunchError).

A worker's result reaches the screen through ``app.call_from_thread``; the handlers there change
only the rows' state and mark the model changed, and the next UI batch paints it.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from vllm_deploy_wizard.tui.process_rows import TAIL_LINES, ClusterRows

#: Seconds between the checks for nodes that are due to be asked (each node is asked
#: :data:`~vllm_deploy_wizard.tui.process_rows.NODE_POLL_S` after its last answer).
CHECK_S = 1.0


def watch_cluster(screen: Any) -> None:
    """Start finding out (in a thread) whether ``screen``'s run heads a cluster launch; when it does,
    ``screen.nodes`` becomes a :class:`NodeWatch` that keeps asking the other nodes."""
    port = getattr(screen.app, "launcher", None)
    find = getattr(port, "cluster_nodes", None)
    if find is None:
        return

    def look() -> None:
        try:
            nodes = find(screen.run_id)
        except Exception:  # noqa: BLE001 - an unreadable cluster record: monitor the run alone
            return
        if nodes:
            _to_ui(screen, partial(NodeWatch.begin, screen, port, nodes))

    screen.run_worker(look, thread=True, group="cluster-find", exit_on_error=False)


def _to_ui(screen: Any, call: Any) -> None:
    """Run ``call()`` on the event loop (from a worker thread); dropped when the app has gone."""
    try:
        screen.app.call_from_thread(call)
    except RuntimeError:  # the app closed while the worker ran
        pass


class NodeWatch:
    """The other nodes of the cluster ``screen``'s run heads, asked through ``port`` (see the module
    docstring); ``rows`` is the table model, ``tails`` the fetched log lines per row key."""

    def __init__(self, screen: Any, port: Any, nodes: list[Any]) -> None:
        self.screen = screen
        self.port = port
        self.rows = ClusterRows(nodes, clock=screen.model.clock)
        self.tails: dict[str, list[str]] = {}

    @classmethod
    def begin(cls, screen: Any, port: Any, nodes: list[Any]) -> None:
        """On the event loop: attach a watch to ``screen``, ask the nodes now and every :data:`CHECK_S`."""
        if not screen.is_attached:
            return
        try:
            screen.nodes = watch = cls(screen, port, nodes)
        except ValueError:  # no node on this machine: not a head we can show
            return
        screen.model.changed = True
        watch.poll()
        screen.set_interval(CHECK_S, watch.poll)

    def poll(self) -> None:
        """Ask every node that is due (:meth:`ClusterRows.due`), each in its own thread worker (also
        after this machine's run ended: the other nodes may still run)."""
        for label in self.rows.due():
            self.rows.asking(label)
            self.screen.run_worker(partial(self._ask, label), thread=True, group=f"node-status-{label}",
                                   exit_on_error=False)
        if any(n.asked is not None for n in self.rows.nodes):
            self.screen.model.changed = True  # the "asking (Ns)" detail ticks

    def _ask(self, label: str) -> None:
        try:
            reply = self.port.node_status(self.screen.run_id, label)
        except Exception as exc:  # noqa: BLE001 - a port that raises: shown as that node's error
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        _to_ui(self.screen, partial(self._answered, label, reply))

    def _answered(self, label: str, reply: dict[str, Any]) -> None:
        if not self.screen.is_attached:  # the monitor was closed while ssh ran
            return
        self.rows.answer(label, reply)
        self.screen.model.changed = True
        if self.screen.selected == f"{label}/":  # a node row on show: its answer changed
            self.screen.repaint_log()

    def owns(self, key: str | None) -> bool:
        """Whether row ``key`` is a node row or another node's process (not a process of this machine)."""
        return key is not None and (key == self.rows.local_key or self.rows.where(key) is not None)

    def pane_lines(self, key: str) -> list[str]:
        """The log pane's lines for row ``key``: for another node's process the tail fetched from its
        node (or that it is being fetched) and then :meth:`ClusterRows.pane_lines` (last, where the
        pane follows: where the log is and the command that prints it); for a node row those lines."""
        lines = self.rows.pane_lines(key)
        found = self.rows.where(key)
        if found is not None and found[1] is not None:
            lines = [*(self.tails.get(key) or [f"fetching its last {TAIL_LINES} lines from {found[0].label} …"]),
                     *lines]
        return lines

    def where_text(self, key: str) -> str:
        """The side panel's words for a node row or another node's process ``key``: which machine."""
        node, name = self.rows.where(key) or (self.rows.local, None)
        return f"{name + ' on ' if name else 'node '}{node.label} ({node.where})"

    def selected(self, key: str) -> None:
        """Row ``key`` was selected: for another node's process, fetch its log tail (in a thread)."""
        found = self.rows.where(key)
        if found is None:
            return
        node, name = found
        if name is None:  # a node row: its pane is its last answer
            return
        self.tails.pop(key, None)
        self.screen.run_worker(partial(self._fetch, key, node.label, name), thread=True, group="node-log",
                               exclusive=True, exit_on_error=False)

    def _fetch(self, key: str, label: str, name: str) -> None:
        fetch = getattr(self.port, "node_log_tail", None)
        try:
            if fetch is None:
                raise RuntimeError("this launcher cannot fetch another node's log")
            got = fetch(self.screen.run_id, label, name, TAIL_LINES)
            lines = [*got, f"--- the last {TAIL_LINES} lines above were fetched from {label} at "
                           f"{time.strftime('%H:%M:%S', time.localtime(self.rows.clock()))} ---"]
        except Exception as exc:  # noqa: BLE001 - LaunchError: ssh's error, said in the pane
            lines = [f"ERROR  could not fetch the log: {exc}"]
        _to_ui(self.screen, partial(self._fetched, key, lines))

    def _fetched(self, key: str, lines: list[str]) -> None:
        if not self.screen.is_attached:
            return
        self.tails[key] = lines
        if self.screen.selected == key:
            self.screen.repaint_log()
