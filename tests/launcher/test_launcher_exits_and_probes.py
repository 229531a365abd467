"""Supervision of exits and probes: the pid recorded while starting, a server exiting 0 after engine
death, the cause of an unmatched failure, probes answered by another server, group signals; real children
from ``sys.executable -c`` scripts, polled to deadlines, never fixed sleeps."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys

import psutil
import pytest
from children import HEALTH_SERVER, PY, cleanup_runs, until, until_sync

from vllm_deploy_wizard.launcher import Probe, ProcessSpec, RunClient, RunSpec, find_run, start_run
from vllm_deploy_wizard.launcher.ports import free_port
from vllm_deploy_wizard.launcher.process import listening_pids
from vllm_deploy_wizard.launcher.spec import RestartPolicy
from vllm_deploy_wizard.launcher.states import ProcessEvent, State
from vllm_deploy_wizard.launcher.supervisor import Supervisor


@pytest.fixture(autouse=True)
def state_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    yield tmp_path / "state"
    cleanup_runs(tmp_path / "state")  # a failed test must not leak supervisors


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class Recorder:
    def __init__(self):
        self.msgs = []

    def __call__(self, m):
        self.msgs.append(m)

    def events(self, name):
        return [m for m in self.msgs if isinstance(m, ProcessEvent) and m.name == name]


#: Prints its argv[1] lines, waits until the file argv[2] exists, then exits 0 — vLLM's API server
#: after EngineDeadError (it serves /health on argv[3] meanwhile).
SERVE_THEN_EXIT_0 = r"""
import http.server, os, sys, threading, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a):
        pass
http.server.HTTPServer.allow_reuse_address = True
srv = http.server.HTTPServer(("127.0.0.1", int(sys.argv[3])), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.02)
for line in sys.argv[1].split("|"):
    print(line, flush=True)
srv.shutdown(); srv.server_close()
sys.exit(0)
"""


# ---------------------------------------------------------------- the pid while starting


def test_pid_is_recorded_while_starting_so_stop_finds_the_children_of_a_killed_supervisor(tmp_path, monkeypatch):
    # no periodic tree refresh during the test: a pid in state.json can only come from the spawn itself,
    # so the deadlines below can be generous (a loaded machine) without the test losing its point
    monkeypatch.setenv("VLLM_WIZARD_TREE_REFRESH_S", "3600")
    port = free_port()
    # never ready: sleeps before binding; starts a grandchild in its group first
    spec = RunSpec((ProcessSpec(
        name="slow", argv=(PY, "-c", HEALTH_SERVER, str(port), "600", "", "grandchild"),
        probe=Probe(f"http://127.0.0.1:{port}/health", interval_s=0.2), ports=(port,), ready_timeout_s=600,
        stop_timeout_s=3,
    ),))
    info = start_run(spec)
    state_file = info.run_dir / "state.json"

    def recorded_pid():
        procs = json.loads(state_file.read_text())["processes"]
        return procs[0]["pid"] if procs[0]["state"] == "STARTING" else None

    until_sync(lambda: recorded_pid() is not None, 30, "pid recorded while STARTING")
    first = recorded_pid()
    # after a restart too: the new pid is recorded as soon as it exists
    asyncio.run(RunClient(info.run_id).restart("slow"))
    until_sync(lambda: recorded_pid() not in (None, first), 30, "new pid recorded after the restart")
    child = recorded_pid()
    until_sync(lambda: not _alive(first), 30, "the first start's process gone")
    log = info.run_dir / "logs" / "slow.log"
    # the restarted child's GRANDCHILD line (the first start may have printed one too, or been
    # restarted before it could): the one whose parent is the recorded child

    def grandchild_of_child() -> int | None:
        for pid in reversed([int(x) for x in re.findall(r"^GRANDCHILD (\d+)$", log.read_text(), re.M)]):
            try:
                if psutil.Process(pid).ppid() == child:
                    return pid
            except psutil.NoSuchProcess:
                continue
        return None

    until_sync(lambda: grandchild_of_child() is not None, 30, "the restarted child's grandchild started")
    grandchild = grandchild_of_child()
    os.kill(info.pid, signal.SIGKILL)
    until_sync(lambda: find_run(info.run_id).status == "stale", 10, "run reported stale")
    assert _alive(child) and _alive(grandchild)
    env = dict(os.environ, NO_COLOR="1")
    out = subprocess.run([sys.executable, "-m", "vllm_deploy_wizard", "stop", info.run_id, "--timeout", "5"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "stopped 2 leftover processes" in out.stdout and str(child) in out.stdout, out.stdout
    until_sync(lambda: not _alive(child) and not _alive(grandchild), 10, "children stopped")
    assert find_run(info.run_id).status == "finished"


# ---------------------------------------------------------------- exit 0 after engine death


async def test_a_server_exiting_0_after_engine_death_is_restarted_with_the_engine_dead_cause(tmp_path):
    port = free_port()
    go = tmp_path / "go"
    lines = "INFO Application startup complete.|ERROR AsyncLLM output_handler failed|" \
            "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace above"
    spec = RunSpec((ProcessSpec(
        name="vllm", argv=(PY, "-c", SERVE_THEN_EXIT_0, lines, str(go), str(port)),
        probe=Probe(f"http://127.0.0.1:{port}/health", interval_s=0.1, timeout_s=1.0), ports=(port,),
        restart=RestartPolicy(mode="on-failure", backoff_initial_s=0.2, max_failures=2, window_s=60),
    ),))
    rec = Recorder()
    sup = Supervisor(spec, listeners=[rec], metrics=False)
    task = asyncio.create_task(sup.run())
    try:
        await until(lambda: State.READY in [e.state for e in rec.events("vllm")], 20, "READY")
        go.touch()  # the "engine" dies: the server prints EngineDeadError and exits 0
        await until(lambda: any(e.state is State.BACKOFF for e in rec.events("vllm")), 20, "BACKOFF")
        ev = next(e for e in rec.events("vllm") if e.state is State.BACKOFF)
        assert "status 0" in ev.detail
        assert ev.cause["kind"] == "engine_dead" and "EngineDeadError" in ev.cause["line"]
        assert "dmesg" in ev.cause["fix"]
        # it restarts, exits 0 again at once (the file is still there) → crash loop → FATAL with the cause
        assert await asyncio.wait_for(task, 30) == "fatal"
        fatal = [e for e in rec.events("vllm") if e.state is State.FATAL]
        assert fatal and fatal[-1].cause["kind"] == "engine_dead"
    finally:
        if not task.done():
            sup.stop()
            await asyncio.wait_for(task, 30)


async def test_a_one_shot_process_exiting_0_is_done(tmp_path):
    spec = RunSpec((ProcessSpec(name="job", argv=(PY, "-c", "print('done')"), phase="before",
                                restart=RestartPolicy(mode="on-failure")),))
    rec = Recorder()
    assert await asyncio.wait_for(Supervisor(spec, listeners=[rec], metrics=False).run(), 20) == "exited"
    last = rec.events("job")[-1]
    assert last.state is State.EXITED and last.cause is None


# ---------------------------------------------------------------- unmatched failures


async def test_an_unmatched_failure_still_names_the_exit_status_and_last_error_line():
    script = "import sys; print('loading'); print('Traceback (most recent call last):'); " \
             "print('  File x, line 1'); print('ZeroDivisionError: division by zero'); print('bye'); sys.exit(3)"
    spec = RunSpec((ProcessSpec(name="w", argv=(PY, "-c", script),
                                restart=RestartPolicy(mode="on-failure", backoff_initial_s=0.05, max_failures=2)),))
    rec = Recorder()
    assert await asyncio.wait_for(Supervisor(spec, listeners=[rec], metrics=False).run(), 20) == "fatal"
    for ev in [e for e in rec.events("w") if e.state in (State.BACKOFF, State.FATAL)]:
        assert ev.cause["kind"] == "unclassified"
        assert ev.cause["line"] == "ZeroDivisionError: division by zero"
        assert ev.cause["summary"] == "exited with status 3; root cause: ZeroDivisionError: division by zero"


# ---------------------------------------------------------------- whose server answers the probe


def _holder(port: int):
    proc = subprocess.Popen([PY, "-c", HEALTH_SERVER, str(port), "0"], stdout=subprocess.PIPE, text=True)
    assert "listening" in proc.stdout.readline() + proc.stdout.readline()
    return proc


async def test_a_probe_answered_by_somebody_elses_server_does_not_make_it_ready():
    port, own = free_port(), free_port()
    other = _holder(port)  # another server already answers on the probe's port
    try:
        if listening_pids("127.0.0.1", port) != {other.pid}:
            pytest.skip("this OS does not show the listening pid")
        # our process runs its own health server on another port: it never binds the probe's port
        spec = RunSpec((ProcessSpec(
            name="web", argv=(PY, "-c", HEALTH_SERVER, str(own), "0"),
            probe=Probe(f"http://127.0.0.1:{port}/health", interval_s=0.05, timeout_s=1.0),
        ),))
        rec = Recorder()
        sup = Supervisor(spec, listeners=[rec], metrics=False)
        task = asyncio.create_task(sup.run())
        try:
            note = f"port {port} is answered by pid {other.pid}"
            await until(lambda: any(note in line for line in sup.logs["web"].last(50)), 20, "foreign listener note")
            # many more polls go by (every 50 ms, each answered 200 by the other server): still not
            # READY, and the note is not repeated
            calls = []
            real = sup._foreign_fn
            sup._foreign_fn = lambda url, mp, argv: calls.append(url) or real(url, mp, argv)
            await until(lambda: len(calls) >= 10, 20, "ten more answered polls")
            assert sup.policy.states["web"].state is State.STARTING
            assert State.READY not in [e.state for e in rec.events("web")]
            assert sum(note in line for line in sup.logs["web"].last(200)) == 1
        finally:
            sup.stop()
            await asyncio.wait_for(task, 30)
    finally:
        other.terminate()
        other.wait(10)


async def test_a_container_client_s_port_is_held_by_the_runtime_and_accepted():
    # `docker run -p P:P …`: docker-proxy (not our tree) listens on P — that is expected
    from vllm_deploy_wizard.launcher.process import foreign_listener, spawn_process

    port = free_port()
    other = _holder(port)
    mp = await spawn_process(ProcessSpec(name="c", argv=(PY, "-c", "import time; time.sleep(600)")))
    try:
        if listening_pids("127.0.0.1", port) != {other.pid}:
            pytest.skip("this OS does not show the listening pid")
        url = f"http://127.0.0.1:{port}/health"
        assert f"answered by pid {other.pid}" in foreign_listener(url, mp, (PY, "-c", "x"))
        assert foreign_listener(url, mp, ("docker", "run", "-p", f"{port}:{port}", "img")) is None
        assert foreign_listener(url, mp, ("sudo", "/usr/bin/podman", "run")) is None
        assert foreign_listener(f"http://127.0.0.1:{free_port()}/health", mp, (PY,)) is None  # nobody listens
    finally:
        mp.kill_tree()
        await mp.wait()
        mp.reader.close()
        other.terminate()
        other.wait(10)


async def test_a_probe_answered_by_its_own_server_is_ready():
    port = free_port()
    spec = RunSpec((ProcessSpec(
        name="web", argv=(PY, "-c", HEALTH_SERVER, str(port), "0"),
        probe=Probe(f"http://127.0.0.1:{port}/health", interval_s=0.05, timeout_s=1.0), ports=(port,),
    ),))
    rec = Recorder()
    sup = Supervisor(spec, listeners=[rec], metrics=False)
    task = asyncio.create_task(sup.run())
    try:
        await until(lambda: State.READY in [e.state for e in rec.events("web")], 20, "READY")
        assert not any("is answered by pid" in line for line in sup.logs["web"].last(50))
    finally:
        sup.stop()
        await asyncio.wait_for(task, 30)


# ---------------------------------------------------------------- signalling a process group


async def test_signal_tree_counts_group_members_the_group_signal_already_ended(monkeypatch):
    from vllm_deploy_wizard.launcher.process import spawn_process

    mp = await spawn_process(ProcessSpec(name="sh", argv=("bash", "-c", "sleep 1000 & sleep 1000 & wait")))
    try:
        await until(lambda: len(psutil.Process(mp.pid).children()) == 2, 10, "two sleeps started")
        tree = {p.pid for p in mp.collect()}
        assert len(tree) == 3

        def gone(self, sig):  # what a member that died of the group signal answers
            raise psutil.NoSuchProcess(self.pid)

        monkeypatch.setattr(psutil.Process, "send_signal", gone)
        assert set(mp.signal_tree(signal.SIGTERM)) == tree
        monkeypatch.undo()
        await until(lambda: not any(_alive(p) for p in tree), 10, "the group stopped")
    finally:
        mp.kill_tree()
        await mp.wait()
        mp.reader.close()
