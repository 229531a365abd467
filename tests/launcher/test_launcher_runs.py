"""Detached runs: the daemon survives its parent, re-attach, stop, and recovery of stale runs."""

from __future__ import annotations

import asyncio
import os
import signal
import stat

import psutil
import pytest
from children import HEALTH_SERVER, PY, cleanup_runs, read_pty_until, until, until_sync

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.launcher import (
    Probe,
    ProcessEvent,
    ProcessSpec,
    RunClient,
    RunFinished,
    RunSpec,
    Snapshot,
    State,
    find_run,
    list_runs,
    start_run,
    stop_stale,
)
from vllm_deploy_wizard.launcher.ports import free_port


@pytest.fixture(autouse=True)
def state_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    yield tmp_path / "state"
    cleanup_runs(tmp_path / "state")  # a failed test must not leak supervisors


API_KEY = "sk-local-7f3a9"


def _spec(port: int, secret: str = "hf_0123456789abcdefghijklmnop") -> RunSpec:
    return RunSpec((ProcessSpec(
        name="srv", argv=(PY, "-c", HEALTH_SERVER, str(port), "0", "", "grandchild", "--api-key", API_KEY),
        env={"HF_TOKEN": secret}, probe=Probe(f"http://127.0.0.1:{port}/health", interval_s=0.2),
        ports=(port,), stop_timeout_s=3,
    ),))


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_detach_reattach_and_stop(state_home):
    secret = "hf_0123456789abcdefghijklmnop"
    info = start_run(_spec(free_port(), secret))
    assert stat.S_IMODE(info.run_dir.stat().st_mode) == 0o700
    sup = psutil.Process(info.pid)
    assert os.getsid(info.pid) != os.getsid(0)  # own session: a closed terminal's SIGHUP can't reach it
    # first attach: watch it become READY, then detach by leaving the iterator
    seen = []
    async for msg in RunClient(info.run_id).events(tail=10):
        seen.append(msg)
        if isinstance(msg, ProcessEvent) and msg.state is State.READY:
            break
        if isinstance(msg, Snapshot) and msg.processes[0]["state"] == "READY":
            break
    assert isinstance(seen[0], Snapshot)
    assert sup.is_running()  # detaching left it alive
    # the supervisor ignores SIGHUP (terminal closed)
    os.kill(info.pid, signal.SIGHUP)
    snap = await RunClient(info.run_id).status()
    assert snap.processes[0]["state"] == "READY" and snap.processes[0]["pid"]
    pids = [snap.processes[0]["pid"]]
    assert [r.status for r in list_runs()] == ["running"]
    # second attach, then stop through the client, and follow it to the end
    client = RunClient()  # newest active run
    assert client.run_id == info.run_id
    msgs = []
    async for msg in client.events(tail=100):
        msgs.append(msg)
        if isinstance(msg, Snapshot):
            assert any("listening" in line for line in msg.tail["srv"])
            await client.stop()
    assert isinstance(msgs[-1], RunFinished) and msgs[-1].outcome == "stopped" and msgs[-1].survivors == []
    until_sync(lambda: not sup.is_running() or sup.status() == psutil.STATUS_ZOMBIE, 10, "supervisor exit")
    assert not any(_alive(p) for p in pids)
    assert find_run(info.run_id).status == "finished"
    # secrets (env token, --api-key value echoed by the child like vLLM does) never reach the run directory
    assert "non-default args: {'api_key': ['***']}" in (info.run_dir / "logs" / "srv.log").read_text()
    for f in info.run_dir.rglob("*"):
        if f.is_file() and f.name != "control.sock":
            text = f.read_text(errors="replace")
            assert secret not in text and API_KEY not in text, f
    assert '"STOPPED"' in (info.run_dir / "events.jsonl").read_text()


async def test_stale_run_after_supervisor_sigkill_is_found_and_stopped():
    info = start_run(_spec(free_port()))
    await until(lambda: (info.run_dir / "state.json").exists()
                and '"READY"' in (info.run_dir / "state.json").read_text(),
                20, "READY recorded")
    snap = await RunClient(info.run_id).status()
    child = snap.processes[0]["pid"]
    grandchildren = [p.pid for p in psutil.Process(child).children(recursive=True)]
    assert grandchildren
    os.kill(info.pid, signal.SIGKILL)
    until_sync(lambda: find_run(info.run_id).status == "stale", 10, "run reported stale")
    assert _alive(child)  # the children ran on, unseen …
    with pytest.raises(LaunchError, match="stale"):
        await RunClient(info.run_id).status()
    stopped = stop_stale(find_run(info.run_id), timeout=5)  # … until status/stop finds them
    assert child in stopped and set(grandchildren) <= set(stopped)
    assert not any(_alive(p) for p in [child, *grandchildren])
    assert find_run(info.run_id).status == "finished"


def test_find_run_errors_name_the_runs():
    with pytest.raises(LaunchError, match="no running run"):
        find_run()
    with pytest.raises(LaunchError, match="matches no run"):
        find_run("nope")


async def test_restart_through_the_client():
    info = start_run(_spec(free_port()))
    client = RunClient(info.run_id)
    with pytest.raises(LaunchError, match="no process 'nope'; processes: srv"):
        await client.restart("nope")
    states, pids = [], []
    async for msg in client.events(tail=0):
        if isinstance(msg, Snapshot) and msg.processes[0]["state"] == "READY":
            pids.append(msg.processes[0]["pid"])
            await client.restart("srv")
        elif isinstance(msg, ProcessEvent):
            states.append(msg.state)
            if msg.state is State.READY and not pids:
                pids.append(msg.pid)
                await client.restart("srv")
            elif msg.state is State.READY:
                pids.append(msg.pid)
                break
    assert states[-3:] == [State.STOPPING, State.STARTING, State.READY]
    assert pids[0] != pids[-1] and not _alive(pids[0])
    await client.stop()
    until_sync(lambda: find_run(info.run_id).status == "finished", 20, "run finished")


def test_closing_the_terminal_does_not_stop_the_run(tmp_path):
    """`vllm-wizard launch` in a real pseudo-terminal; the terminal goes away (SIGHUP to its session)."""
    import pty
    import subprocess
    import sys

    import yaml

    port = free_port()
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({"plan_version": 1, "plan": {"processes": [{
        "name": "web", "argv": [PY, "-c", HEALTH_SERVER, str(port), "0"], "ports": [port],
        "health": {"url": f"http://127.0.0.1:{port}/health", "interval_s": 0.2}}]}}))
    master, slave = pty.openpty()
    import fcntl
    import termios

    def controlling_terminal():  # like a login shell: own session, the pty as controlling terminal
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    term = subprocess.Popen([sys.executable, "-m", "vllm_deploy_wizard", "launch", str(plan), "--wait"],
                            stdin=slave, stdout=slave, stderr=slave, preexec_fn=controlling_terminal)
    os.close(slave)
    out = read_pty_until(master, lambda out: b"READY" in out, 60, "READY on the terminal")
    term.wait(30)
    os.close(master)  # the terminal is gone
    os.killpg(term.pid, signal.SIGHUP) if term.poll() is None else None
    info = find_run()
    assert info.status == "running", out.decode(errors="replace")
    assert os.getsid(info.pid) != term.pid  # the supervisor is not in the terminal's session
    os.kill(info.pid, signal.SIGHUP)
    snap = asyncio.run(RunClient(info.run_id).status())
    assert snap.processes[0]["state"] == "READY"
    asyncio.run(RunClient(info.run_id).stop())
    until_sync(lambda: find_run(info.run_id).status == "finished", 20, "run finished")


async def test_a_subscriber_that_cannot_keep_up_is_dropped_not_waited_for():
    import json as _json

    from vllm_deploy_wizard.launcher import LogLines, RunServer
    from vllm_deploy_wizard.launcher.daemon import prepare_run_dir

    spec = _spec(free_port())
    server = RunServer(prepare_run_dir(spec), spec)
    slow: asyncio.Queue = asyncio.Queue(2)
    server.clients.add(slow)
    for i in range(3):  # the third message overflows its queue: the supervisor must not block
        server._on_message(LogLines("srv", [f"line {i}"]))
    assert slow not in server.clients
    first = _json.loads(slow.get_nowait())
    assert first["type"] == "error" and "too slow" in first["message"]
    assert slow.get_nowait() is None


async def test_a_starting_run_is_waited_for_never_stale(state_home):
    """Between the run dir appearing and the supervisor's first state.json, readers see "starting"."""
    import json as _json

    from vllm_deploy_wizard.launcher.daemon import prepare_run_dir, spawn_supervisor
    from vllm_deploy_wizard.launcher.runs import read_run

    spec = _spec(free_port())
    run_dir = prepare_run_dir(spec)
    assert read_run(run_dir).status == "starting"  # no supervisor yet, brand-new directory
    proc = spawn_supervisor(run_dir)  # alive, but blocked reading its spec: no state.json, no socket
    try:
        info = read_run(run_dir)
        assert info.status == "starting" and info.pid == proc.pid
        assert not (run_dir / "state.json").exists() and not (run_dir / "control.sock").exists()
        assert find_run().run_id == run_dir.name and [r.status for r in list_runs()] == ["starting"]
        asking = asyncio.create_task(RunClient(run_dir.name).status())
        done, _ = await asyncio.wait({asking}, timeout=0.3)
        assert not done  # the client waits for the supervisor instead of calling the run stale
        proc.stdin.write(_json.dumps(spec.to_dict()).encode())
        proc.stdin.close()
        snap = await asyncio.wait_for(asking, 30)
        assert [p["name"] for p in snap.processes] == ["srv"] and find_run().status == "running"
        await RunClient(run_dir.name).stop()
        await until(lambda: proc.poll() is not None, 30, "supervisor exit")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert read_run(run_dir).status == "finished"
    # the daemon starts without runpy's double-import RuntimeWarning (or any other noise)
    log = (run_dir / "supervisor.log").read_text()
    assert log == "run finished: stopped\n", log


def test_a_run_without_state_whose_supervisor_died_is_stale(state_home):
    import subprocess
    import sys

    from vllm_deploy_wizard.launcher.daemon import prepare_run_dir
    from vllm_deploy_wizard.launcher.runs import read_run, record_supervisor

    run_dir = prepare_run_dir(_spec(free_port()))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    record_supervisor(run_dir, dead.pid)
    dead.wait()
    assert read_run(run_dir).status == "stale"
    with pytest.raises(LaunchError, match="is stale"):
        asyncio.run(RunClient(run_dir.name).status())
