"""The process table of a cluster head (tui/process_rows.py), from canned node answers and a fake clock:
node rows grouping every node's processes, states, pids and ports as ``status --all-nodes`` reports
them, when each node is asked again, and what a node that cannot be asked shows."""

from __future__ import annotations

import pytest

from vllm_deploy_wizard.launcher import ProcessEvent, State
from vllm_deploy_wizard.launcher.engines.ssh import NodeRun
from vllm_deploy_wizard.tui.monitor_model import MonitorModel
from vllm_deploy_wizard.tui.process_rows import ClusterRows, logs_command, reported_row

T0 = 1_790_000_000.0
REFUSED = "ssh: connect to host worker.example port 22: Connection refused"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def worker_reply(state: str = "READY", **proc) -> dict:
    p = {"name": "vllm-worker-1", "state": state, "pid": 17, "ports": [8001, 8002], "restarts": 1,
         "since": T0 - 70, "create_time": T0 - 65, **proc}
    return {"label": "node-1", "dest": "10.0.0.2", "run_id": "run-b", "ok": True, "error": None,
            "run": {"run_id": "run-b", "status": "running", "outcome": None, "processes": [p]}}


def unreachable() -> dict:
    return {"label": "node-22", "dest": "worker.example", "run_id": "run-c", "ok": False, "error": REFUSED,
            "run": None}


NODES = [NodeRun("node-0", None, "run-a"), NodeRun("node-1", "10.0.0.2", "run-b"),
         NodeRun("node-22", "worker.example", "run-c")]


def head_model(clock) -> MonitorModel:
    model = MonitorModel(clock)
    model.feed(ProcessEvent("vllm-head", State.STARTING, State.STOPPED, T0 - 30, pid=4242))
    model.feed(ProcessEvent("vllm-head", State.READY, State.STARTING, T0 - 10, pid=4242))
    return model


def by_key(rows) -> dict:
    return {r.key: r for r in rows}


def test_every_nodes_processes_are_listed_under_their_node_in_cluster_order():
    clock = Clock()
    table = ClusterRows(NODES, clock)
    table.answer("node-1", worker_reply())
    table.answer("node-22", unreachable())
    rows = table.rows(head_model(clock).procs)
    assert [r.key for r in rows] == ["node-0/", "vllm-head", "node-1/", "node-1/vllm-worker-1", "node-22/"]
    assert [r.kind for r in rows] == ["node", "process", "node", "remote", "node"]
    cells = by_key(rows)
    assert cells["node-0/"].cells == {"name": "node-0", "state": "running", "pid": "", "uptime": "", "restarts": "",
                                      "ready": "1/1", "detail": "this machine · run run-a"}
    assert cells["vllm-head"].cells["name"] == "  vllm-head" and cells["vllm-head"].cells["pid"] == "4242"
    assert cells["node-1/"].cells["state"] == "running" and cells["node-1/"].cells["ready"] == "1/1"
    assert cells["node-1/"].cells["detail"] == "10.0.0.2 · run run-b"
    w = cells["node-1/vllm-worker-1"].cells
    assert (w["name"], w["state"], w["pid"], w["restarts"], w["ready"]) == ("  vllm-worker-1", "READY", "17", "1", "✓")
    assert w["detail"] == "ports=8001,8002", "ports as status prints them"
    assert w["uptime"] == "1m05s", "from the process's start time the node recorded"
    down = cells["node-22/"].cells
    assert down["state"] == "UNKNOWN" and down["detail"] == f"unreachable: {REFUSED}"


def test_a_failed_remote_process_shows_its_cause_and_a_starting_one_its_phase():
    clock = Clock()
    table = ClusterRows(NODES[:2], clock)
    table.answer("node-1", worker_reply("FATAL", pid=None, cause={"summary": "out of memory"}))
    w = by_key(table.rows({}))["node-1/vllm-worker-1"].cells
    assert (w["state"], w["pid"], w["uptime"], w["ready"]) == ("FATAL", "–", "–", "")
    assert w["detail"] == "out of memory · ports=8001,8002"
    table.answer("node-1", worker_reply("STARTING", progress={"phase": "loading_weights", "percent": 40}))
    w = by_key(table.rows({}))["node-1/vllm-worker-1"].cells
    assert w["detail"] == "loading weights 40% · ports=8001,8002" and w["pid"] == "17"


def test_each_node_is_asked_again_a_period_after_its_own_answer_never_twice_at_once():
    clock = Clock()
    table = ClusterRows(NODES, clock, period=5.0)
    assert table.due() == ["node-1", "node-22"], "never asked: both now (this machine's run is live already)"
    table.asking("node-1")
    table.asking("node-22")
    assert table.due() == []
    clock.now += 2
    table.answer("node-1", worker_reply())
    clock.now += 4.9
    assert table.due() == [], "node-1 answered 4.9 s ago; node-22 still in flight"
    clock.now += 0.1
    assert table.due() == ["node-1"]
    clock.now += 30
    assert table.due() == ["node-1"], "a node that hangs holds back only its own asking"
    assert by_key(table.rows({}))["node-22/"].cells["detail"] == "asking worker.example over ssh (37s)"
    table.asking("node-1")
    clock.now += 9
    assert by_key(table.rows({}))["node-1/"].cells["detail"] == "10.0.0.2 · run run-b", "a slow answer is normal"
    clock.now += 2
    assert by_key(table.rows({}))["node-1/"].cells["detail"] == "10.0.0.2 · run run-b · no answer for 11s"


def test_a_node_not_answered_yet_says_it_is_being_asked():
    clock = Clock()
    table = ClusterRows(NODES[:2], clock)
    table.asking("node-1")
    clock.now += 3
    row = by_key(table.rows({}))["node-1/"].cells
    assert row["state"] == "asking…" and row["detail"] == "asking 10.0.0.2 over ssh (3s)"


def test_a_node_that_stops_answering_keeps_its_last_processes_marked_stale():
    clock = Clock()
    table = ClusterRows(NODES[:2], clock)
    table.answer("node-1", worker_reply())
    clock.now += 40
    table.answer("node-1", {"ok": False, "error": "no answer within 30 s", "run": None})
    rows = by_key(table.rows({}))
    assert rows["node-1/"].cells["state"] == "UNKNOWN"
    assert rows["node-1/"].cells["detail"] == "unreachable: no answer within 30 s"
    assert rows["node-1/vllm-worker-1"].stale
    assert rows["node-1/vllm-worker-1"].cells["detail"] == "as of 40s ago · ports=8001,8002"
    table.answer("node-1", worker_reply())
    assert not by_key(table.rows({}))["node-1/vllm-worker-1"].stale


def test_the_pane_of_another_nodes_rows_says_where_and_how_to_read_the_logs():
    clock = Clock()
    table = ClusterRows(NODES, clock)
    table.answer("node-22", unreachable())
    clock.now += 2
    lines = table.pane_lines("node-22/")
    assert lines[0] == "node node-22 · worker.example · run run-c · cannot be asked"
    assert lines[1] == f"  unreachable: {REFUSED}"
    assert lines[2] == "  last answer 2s ago; asked again every 5 s"
    assert "vllm-wizard logs --node node-22 [PROCESS]" in lines[-1]
    table.answer("node-1", worker_reply())
    proc = table.pane_lines("node-1/vllm-worker-1")
    assert proc[0] == "vllm-worker-1 runs on node-1 (10.0.0.2), run run-b; its log is there"
    assert "vllm-wizard logs --node node-1 vllm-worker-1" in proc[1]
    assert table.pane_lines("vllm-head") == [], "this machine's processes show their live log"
    assert "select one for its live log" in table.pane_lines("node-0/")[1]
    assert logs_command("node-1") == "vllm-wizard logs --node node-1"


def test_reported_row_of_a_settled_process_has_no_pid_or_uptime():
    row = reported_row({"name": "router", "state": "EXITED", "pid": 99, "ports": [], "restarts": 0}, T0)
    assert row.pid is None and row.started is None and row.detail == "ports=-"


def test_a_cluster_needs_this_machines_node():
    with pytest.raises(ValueError, match="one node on this machine"):
        ClusterRows([NodeRun("node-1", "h", "r")])
