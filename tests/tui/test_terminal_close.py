"""Closing the terminal, one rule (README "Closing the terminal"): a run started from the wizard (or
``launch`` without ``--foreground``) survives the terminal's SIGHUP; ``launch --foreground`` stops.

Each side runs in a real pseudo-terminal whose controlling process is the command, as a login
shell's job is; the terminal then goes away (the master end closed, SIGHUP to its session)."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import signal
import subprocess
import sys
import termios
import time

import pytest
import yaml

from vllm_deploy_wizard.launcher import RunClient, find_run, list_runs
from vllm_deploy_wizard.launcher.ports import free_port

#: What the wizard's launch key does (screen_review → ``app.launcher.start``), in a process that
#: then stays, as the wizard does after a launch.
WIZARD_LAUNCH = r"""
import sys, time
from pathlib import Path
from vllm_deploy_wizard.tui.launch_port import RealLauncher
print("LAUNCHED", RealLauncher().start(Path(sys.argv[1]), {}), flush=True)
time.sleep(600)
"""


@pytest.fixture
def plan(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    port = free_port()
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({"plan_version": 1, "plan": {"processes": [{
        "name": "web", "argv": [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        "ports": [port], "health": {"url": f"http://127.0.0.1:{port}/", "interval_s": 0.2}}]}}))
    yield path
    for info in list_runs(include_finished=False) if (tmp_path / "state").exists() else []:
        if info.status in ("running", "starting"):  # a failed test must not leak a supervisor
            asyncio.run(RunClient(info.run_id).stop())


def _in_terminal(argv: list[str]) -> tuple[subprocess.Popen, int]:
    master, slave = pty.openpty()

    def controlling_terminal():  # like a login shell: own session, the pty as controlling terminal
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, preexec_fn=controlling_terminal)
    os.close(slave)
    return proc, master


def _read_until(master: int, word: bytes, timeout: float = 60) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    while word not in out and time.monotonic() < deadline:
        try:
            out += os.read(master, 4096)
        except OSError:
            break
    return out


def _close_terminal(proc: subprocess.Popen, master: int) -> None:
    os.close(master)
    try:
        os.killpg(proc.pid, signal.SIGHUP)  # what the kernel sends the session when its terminal hangs up
    except ProcessLookupError:
        pass


def _until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_run_started_from_the_wizard_survives_the_terminal_closing(plan):
    proc, master = _in_terminal([sys.executable, "-c", WIZARD_LAUNCH, str(plan)])
    out = _read_until(master, b"\n", 60)
    assert b"LAUNCHED" in out, out.decode(errors="replace")
    run_id = out.split(b"LAUNCHED", 1)[1].split()[0].decode()
    _until(lambda: any(p.get("state") == "READY" for p in find_run(run_id).processes), 30, "READY")
    _close_terminal(proc, master)
    assert proc.wait(30) == -signal.SIGHUP  # the wizard's own process goes with its terminal
    snap = asyncio.run(RunClient(run_id).status())
    assert find_run(run_id).status == "running" and snap.processes[0]["state"] == "READY"


def test_launch_foreground_stops_when_the_terminal_closes(plan):
    proc, master = _in_terminal([sys.executable, "-m", "vllm_deploy_wizard", "launch", str(plan), "--foreground",
                                 "--skip-flag-check"])
    out = _read_until(master, b"READY", 60)
    assert b"READY" in out, out.decode(errors="replace")
    _close_terminal(proc, master)
    assert proc.wait(30) == 128 + signal.SIGHUP
    _until(lambda: list_runs()[0].status == "finished", 20, "the run recorded as finished")
    assert list_runs()[0].outcome == "stopped"
