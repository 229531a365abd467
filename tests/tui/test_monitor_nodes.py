"""The monitor of a cluster head (``launch --all-nodes``): every node's processes in the one table, an
unreachable node's reason, a node that does not answer holding back only its own rows, and another
node's log fetched on selection — the launcher's node answers canned (fakes.FakeClusterLauncher)."""

from __future__ import annotations

import threading

from canned import ready_run
from fakes import FakeClusterLauncher
from textual.widgets import DataTable
from tui_steps import settle, until

from vllm_deploy_wizard.launcher.engines.ssh import NodeRun
from vllm_deploy_wizard.tui.log_pane import LogPane
from vllm_deploy_wizard.tui.screen_monitor import MonitorScreen

REFUSED = "ssh: connect to host worker.example port 22: Connection refused"


def _worker_reply() -> dict:
    proc = {"name": "vllm-worker-1", "state": "READY", "pid": 17, "ports": [8001], "restarts": 0,
            "since": 1_789_999_990.0, "create_time": 1_789_999_980.0}
    return {"label": "node-1", "dest": "10.0.0.2", "run_id": "run-b", "ok": True, "error": None,
            "run": {"run_id": "run-b", "status": "running", "outcome": None, "processes": [proc]}}


def _pane(screen) -> str:
    return "\n".join(strip.text for strip in screen.query_one("#log", LogPane).rendered_rows())


async def test_the_monitor_of_a_cluster_head_lists_every_nodes_processes(build_app):
    """You should see node-0 (this machine) with vllm-head, node-1 with vllm-worker-1 READY pid 17,
    node-22 UNKNOWN with ssh's error, and node-3 still being asked without holding anything back."""
    hung = threading.Event()
    nodes = [NodeRun("node-0", None, "run-a"), NodeRun("node-1", "10.0.0.2", "run-b"),
             NodeRun("node-22", "worker.example", "run-c"), NodeRun("node-3", "10.0.0.4", "run-d")]
    replies = {"node-1": _worker_reply(),
               "node-22": {"ok": False, "error": REFUSED, "run": None},
               "node-3": lambda: (hung.wait(30), {"ok": False, "error": "released", "run": None})[1]}
    tails = {("node-1", "vllm-worker-1"): ["==> vllm-worker-1 (READY) /logs/vllm-worker-1.log <==",
                                           "INFO worker rank 1 joined the head"]}
    launcher = FakeClusterLauncher(nodes, replies, tails, events=ready_run("vllm-head"))
    app = build_app(launcher=launcher, attach="run-a")
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, MonitorScreen) and app.screen.query("#procs"), 10,
                        "the monitor's process table")
            screen = app.screen
            table = screen.query_one("#procs", DataTable)

            def keys() -> list[str]:
                return [str(r.key.value) for r in table.ordered_rows]

            want = ["node-0/", "vllm-head", "node-1/", "node-1/vllm-worker-1", "node-22/", "node-3/"]
            await until(pilot, lambda: keys() == want and str(table.get_cell("vllm-head", "state")) == "READY"
                        and str(table.get_cell("node-22/", "state")) == "UNKNOWN", 20,
                        "every node's rows", detail=lambda: f"rows {keys()}")
            assert str(table.get_cell("node-1/vllm-worker-1", "state")) == "READY"
            assert table.get_cell("node-1/vllm-worker-1", "pid") == "17"
            assert table.get_cell("node-1/vllm-worker-1", "detail") == "ports=8001"
            assert table.get_cell("node-22/", "detail") == f"unreachable: {REFUSED}"[:60]
            assert str(table.get_cell("node-3/", "state")) == "asking…", "node-3 hangs; the others are shown"
            assert table.get_cell("vllm-head", "pid") == "4242", "this machine's rows stay live"
            assert screen.selected == "vllm-head" and table.cursor_row == 1, "this machine's process, not its node row"

            table.focus()
            table.move_cursor(row=keys().index("node-22/"))
            await until(pilot, lambda: REFUSED in _pane(screen), 10, "the unreachable node's reason in the pane")
            assert "vllm-wizard logs --node node-22" in _pane(screen)

            table.move_cursor(row=keys().index("node-1/vllm-worker-1"))
            await until(pilot, lambda: "worker rank 1 joined the head" in _pane(screen), 10, "node-1's log tail")
            assert "vllm-wizard logs --node node-1 vllm-worker-1" in _pane(screen)
            await until(pilot, lambda: str(screen.query_one("#phase").render()) == "vllm-worker-1 on node-1 (10.0.0.2)",
                        5, "the side panel naming the machine", detail=lambda: str(screen.query_one("#phase").render()))
            await pilot.press("r")
            await settle(pilot)
            assert launcher.clients["run-a"].commands == [], "r never restarts another node's process here"

            table.move_cursor(row=keys().index("vllm-head"))
            await until(pilot, lambda: "Application startup complete." in _pane(screen), 10, "vllm-head's live log")
            assert launcher.asked.count("node-3") == 1, "a node is never asked twice at once"
            await pilot.press("s")
            await settle(pilot)
            question = str(app.screen.query_one("#confirm-question").render())
            assert question.startswith("Stop the run (vllm-head)?") and "stop --all-nodes" in question
            await pilot.press("n")
            await settle(pilot)
            assert launcher.clients["run-a"].commands == []
    finally:
        hung.set()
