"""The headless commands as a person runs them: launch (foreground/detached), status, attach, stop."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys

import psutil
import pytest
import yaml

from children import FAIL, HEALTH_SERVER, PY, until_sync
from vllm_wizard.launcher.ports import free_port


@pytest.fixture
def env(tmp_path):
    e = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"), NO_COLOR="1")
    return e


def _cli(env, *args, timeout=60):
    return subprocess.run([sys.executable, "-m", "vllm_wizard", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def _plan_file(tmp_path, port, extra=None):
    procs = [{"name": "web", "role": "serve", "node_rank": 0, "argv": [PY, "-c", HEALTH_SERVER, str(port), "0"],
              "ports": [port], "health": {"url": f"http://127.0.0.1:{port}/health", "expect_status": 200, "interval_s": 0.2},
              "stop": {"timeout_s": 5}}]
    procs += extra or []
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump({"plan_version": 1, "plan": {"processes": procs, "placeholders": []}}))
    return f


def test_foreground_prints_prefixed_lines_and_ctrl_c_stops_clean(tmp_path, env):
    port = free_port()
    plan = _plan_file(tmp_path, port)
    p = subprocess.Popen([sys.executable, "-m", "vllm_wizard", "launch", str(plan), "--foreground"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in p.stdout:
        lines.append(line)
        if "▸ READY" in line:
            break
    assert any(line.startswith("web | listening") for line in lines), lines
    tree = [p.pid] + [c.pid for c in psutil.Process(p.pid).children(recursive=True)]
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 0, out
    assert "web ▸ STOPPED" in out and "run finished: stopped" in out and "summary:" in out
    assert "\x1b[" not in out  # NO_COLOR / not a terminal
    assert not [x for x in tree[1:] if psutil.pid_exists(x) and psutil.Process(x).status() != psutil.STATUS_ZOMBIE]


def test_foreground_fatal_exits_1_with_cause(tmp_path, env):
    plan = _plan_file(tmp_path, free_port(), [{
        "name": "boom", "phase": "engine", "depends_on": [], "argv": [PY, "-c", FAIL, "1", "OSError: [Errno 98] Address already in use"],
        "restart": {"mode": "on-failure", "max_failures": 2, "backoff_initial_s": 0.05}}])
    r = _cli(env, "launch", str(plan), "--foreground")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "boom ▸ FATAL" in r.stdout and "cause: a port it needs is already in use" in r.stdout


def test_unresolved_placeholder_exits_2_naming_it(tmp_path, env):
    plan = _plan_file(tmp_path, free_port(), [{"name": "r", "role": "router", "argv": ["vllm-router", "--host", "$ROUTER_HOST"]}])
    r = _cli(env, "launch", str(plan))
    assert r.returncode == 2 and "$ROUTER_HOST" in r.stderr and "--set ROUTER_HOST=VALUE" in r.stderr
    r = _cli(env, "launch", str(plan), "--set", "ROUTER_HOST")
    assert r.returncode == 2 and "expected VAR=VALUE" in r.stderr


def test_detached_launch_status_attach_stop(tmp_path, env):
    port = free_port()
    plan = _plan_file(tmp_path, port)
    r = _cli(env, "launch", str(plan), "--wait")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all 1 processes READY" in r.stdout
    run_id = r.stdout.split()[2]
    st = json.loads(_cli(env, "status", "--json").stdout)
    assert st[0]["run_id"] == run_id and st[0]["status"] == "running"
    web_pid = st[0]["processes"][0]["pid"]
    assert st[0]["processes"][0]["state"] == "READY" and psutil.pid_exists(web_pid)
    # attach, then Ctrl-C: detaches, the run goes on
    a = subprocess.Popen([sys.executable, "-m", "vllm_wizard", "attach", run_id[:10]], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    first = []
    for line in a.stdout:
        first.append(line)
        if "listening" in line:
            break
    a.send_signal(signal.SIGINT)
    out, _ = a.communicate(timeout=20)
    assert a.returncode == 0 and "detached" in out, "".join(first) + out
    assert "READY" in "".join(first)
    assert psutil.pid_exists(web_pid)
    r = _cli(env, "stop")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "run finished: stopped" in r.stdout
    until_sync(lambda: not psutil.pid_exists(web_pid) or psutil.Process(web_pid).status() == psutil.STATUS_ZOMBIE, 10)
    assert "finished (stopped)" in _cli(env, "status", "--all").stdout
    assert _cli(env, "status").stdout.startswith("no runs")


def test_printer_colours_unless_no_color(monkeypatch):
    from vllm_wizard.commands.launch import Printer
    from vllm_wizard.launcher import LogLines

    buf = io.StringIO()
    Printer(["a", "bb"], out=buf, color=True)(LogLines("a", ["hi"]))
    assert buf.getvalue() == "\x1b[36ma \x1b[0m | hi\n"
    monkeypatch.setenv("NO_COLOR", "1")

    class Tty(io.StringIO):
        def isatty(self):
            return True

    t = Tty()
    Printer(["a"], out=t)(LogLines("a", ["hi"]))
    assert t.getvalue() == "a | hi\n"


def test_stale_run_status_and_stop_after_supervisor_sigkill(tmp_path, env):
    plan = _plan_file(tmp_path, free_port())
    r = _cli(env, "launch", str(plan), "--wait")
    assert r.returncode == 0, r.stdout + r.stderr
    st = json.loads(_cli(env, "status", "--json").stdout)[0]
    web_pid = st["processes"][0]["pid"]
    os.kill(st["supervisor_pid"], signal.SIGKILL)
    until_sync(lambda: json.loads(_cli(env, "status", "--json").stdout)[0]["status"] == "stale", 15, "stale")
    r = _cli(env, "status")
    assert r.returncode == 1 and "supervisor is gone but 1 processes still run" in r.stdout
    assert psutil.pid_exists(web_pid)
    r = _cli(env, "attach")
    assert r.returncode == 2 and "stale" in r.stderr and "vllm-wizard stop" in r.stderr
    r = _cli(env, "stop")
    assert r.returncode == 0 and f"stopped 1 leftover processes [{web_pid}]" in r.stdout
    until_sync(lambda: not psutil.pid_exists(web_pid) or psutil.Process(web_pid).status() == psutil.STATUS_ZOMBIE, 10)
    assert _cli(env, "status").returncode == 0
