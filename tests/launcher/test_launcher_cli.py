"""The headless commands as a person runs them: launch (foreground/detached), status, attach, stop."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading

import psutil
import pytest
import yaml
from children import FAIL, HEALTH_SERVER, PY, read_pty_until, run_cli, until_sync

from vllm_deploy_wizard.launcher.ports import free_port

_cli = run_cli  # the `env` fixture is in conftest.py


def _plan_file(tmp_path, port, extra=None):
    procs = [{"name": "web", "role": "serve", "node_rank": 0, "argv": [PY, "-c", HEALTH_SERVER, str(port), "0"],
              "ports": [port],
              "health": {"url": f"http://127.0.0.1:{port}/health", "expect_status": 200, "interval_s": 0.2},
              "stop": {"timeout_s": 5}}]
    procs += extra or []
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump({"plan_version": 1, "plan": {"processes": procs, "placeholders": []}}))
    return f


def test_foreground_prints_prefixed_lines_and_ctrl_c_stops_clean(tmp_path, env):
    port = free_port()
    plan = _plan_file(tmp_path, port)
    p = subprocess.Popen([sys.executable, "-m", "vllm_deploy_wizard", "launch", str(plan), "--foreground"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in p.stdout:
        lines.append(line)
        if "▸ READY" in line:
            break
    assert any(line.startswith("web | listening") for line in lines), lines
    assert sum("READY" in line for line in lines) == 1, lines  # each state change printed once
    tree = [p.pid] + [c.pid for c in psutil.Process(p.pid).children(recursive=True)]
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 130, out  # stopped by SIGINT: 128 + 2, as a shell reports it
    assert "web ▸ STOPPED" in out and "run finished: stopped" in out and "summary:" in out
    assert "\x1b[" not in out  # NO_COLOR / not a terminal
    assert not [x for x in tree[1:] if psutil.pid_exists(x) and psutil.Process(x).status() != psutil.STATUS_ZOMBIE]


def test_foreground_fatal_exits_1_with_cause(tmp_path, env):
    plan = _plan_file(tmp_path, free_port(), [{
        "name": "boom", "phase": "engine", "depends_on": [],
        "argv": [PY, "-c", FAIL, "1", "OSError: [Errno 98] Address already in use"],
        "restart": {"mode": "on-failure", "max_failures": 2, "backoff_initial_s": 0.05}}])
    r = _cli(env, "launch", str(plan), "--foreground")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "boom ▸ FATAL" in r.stdout and "cause: a port it needs is already in use" in r.stdout


def test_unresolved_placeholder_exits_2_naming_it(tmp_path, env):
    # another machine's address: nothing on this node can default it
    plan = _plan_file(tmp_path, free_port(),
                      [{"name": "r", "role": "router", "argv": ["vllm-router", "--worker", "$DECODE_NODE_2"]}])
    r = _cli(env, "launch", str(plan))
    assert r.returncode == 2 and "$DECODE_NODE_2" in r.stderr and "--set DECODE_NODE_2=VALUE" in r.stderr
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
    # started with SIGINT ignored, as a background job of a non-interactive shell (CI) starts it
    a = subprocess.Popen([sys.executable, "-m", "vllm_deploy_wizard", "attach", run_id[:10]], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
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
    until_sync(lambda: not psutil.pid_exists(web_pid) or psutil.Process(web_pid).status() == psutil.STATUS_ZOMBIE, 10,
               "the web process gone")
    assert "finished (stopped)" in _cli(env, "status", "--all").stdout
    assert _cli(env, "status").stdout.startswith("no runs")


def test_printer_colours_unless_no_color(monkeypatch):
    from vllm_deploy_wizard.commands.launch import Printer
    from vllm_deploy_wizard.launcher import LogLines

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
    until_sync(lambda: not psutil.pid_exists(web_pid) or psutil.Process(web_pid).status() == psutil.STATUS_ZOMBIE, 10,
               "the web process gone")
    assert _cli(env, "status").returncode == 0


def test_printer_hides_the_supervisors_transition_notes():
    from vllm_deploy_wizard.commands.launch import Printer
    from vllm_deploy_wizard.launcher import LogLines

    buf = io.StringIO()
    Printer(["a"], out=buf, color=False)(LogLines("a", ["[wizard] STOPPED → STARTING: starting", "[wizard] starting: x",
                                                        "real line → READY: not a note"]))
    assert buf.getvalue() == "a | [wizard] starting: x\na | real line → READY: not a note\n"


class _Host:
    primary_ip = "10.1.2.3"
    default_iface = "ens5"


def test_set_of_an_unknown_placeholder_warns_and_detection_fills_the_rest():
    from vllm_deploy_wizard.workflows.launching import resolve_values

    data = {"plan_version": 1, "plan": {"placeholders": ["HEAD_IP", "IFACE_NAME", "ROUTER_HOST"], "processes": []}}
    calls = []

    def host():
        calls.append(1)
        return _Host()

    err = io.StringIO()
    values = resolve_values(data, ["FOO=1", "ROUTER_HOST=r"], 0, err, host)
    assert values == {"HEAD_IP": "10.1.2.3", "IFACE_NAME": "ens5", "ROUTER_HOST": "r", "FOO": "1"}
    assert "warning: --set FOO=1: the plan has no $FOO placeholder; its placeholders: $HEAD_IP, $IFACE_NAME, " \
           "$ROUTER_HOST" in err.getvalue()
    assert ("using detected defaults: HEAD_IP=10.1.2.3 IFACE_NAME=ens5 (override with --set NAME=VALUE)"
            in err.getvalue())
    # given values win; on another node $HEAD_IP is the head's address, never this host's
    err = io.StringIO()
    assert resolve_values(data, ["IFACE_NAME=eth9"], 1, err, host) == {"IFACE_NAME": "eth9"}
    assert err.getvalue() == "" and len(calls) == 1  # detection not even run
    err = io.StringIO()
    assert resolve_values(data, [], 1, err, host) == {"IFACE_NAME": "ens5"}

    def no_host_facts():
        return type("H", (), {"primary_ip": None, "default_iface": None})()

    # a fact detection could not find stays unresolved (the plan then says --set)
    assert resolve_values(data, [], 0, io.StringIO(), no_host_facts) == {}


def test_the_plans_own_placeholder_defaults_fill_what_nobody_set_and_say_so():
    """A co-located PD plan (contracts §2 placeholder_defaults) launches without --set; --set and
    detection win over the plan's defaults; each default used is printed."""
    from vllm_deploy_wizard.workflows.launching import resolve_values

    data = {"plan_version": 1, "plan": {
        "placeholders": ["PREFILL_NODE_1", "DECODE_NODE_1", "ROUTER_HOST", "ROUTER_PORT", "HEAD_IP"],
        "placeholder_defaults": {"PREFILL_NODE_1": "127.0.0.1", "DECODE_NODE_1": "127.0.0.1",
                                 "ROUTER_HOST": "localhost", "ROUTER_PORT": "30000", "UNUSED": "x",
                                 "HEAD_IP": "192.0.2.9"},
        "processes": []}}
    err = io.StringIO()
    values = resolve_values(data, ["ROUTER_PORT=31000"], 0, err, lambda: _Host())
    assert values == {"PREFILL_NODE_1": "127.0.0.1", "DECODE_NODE_1": "127.0.0.1", "ROUTER_HOST": "localhost",
                      "ROUTER_PORT": "31000", "HEAD_IP": "10.1.2.3"}
    assert ("using the plan's defaults: DECODE_NODE_1=127.0.0.1 PREFILL_NODE_1=127.0.0.1 ROUTER_HOST=localhost "
            "(override with --set NAME=VALUE)") in err.getvalue()


def test_launch_fills_head_ip_and_iface_from_detection(tmp_path, env):
    from vllm_deploy_wizard.detect import detect

    host = detect().host
    if not (host.primary_ip and host.default_iface):
        pytest.skip(f"detection finds no address/interface here ({host.primary_ip}, {host.default_iface})")
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({"plan_version": 1, "plan": {
        "placeholders": ["HEAD_IP", "IFACE_NAME"], "processes": [{
        "name": "echo", "argv": [PY, "-c", "import sys; print('got', *sys.argv[1:])", "$HEAD_IP", "${IFACE_NAME}"],
        "restart": "never"}]}}))
    r = _cli(env, "launch", str(plan), "--foreground", "--skip-flag-check", "--set", "HEAD_IPP=1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"echo | got {host.primary_ip} {host.default_iface}" in r.stdout
    assert f"using detected defaults: HEAD_IP={host.primary_ip} IFACE_NAME={host.default_iface}" in r.stderr
    assert ("warning: --set HEAD_IPP=1: the plan has no $HEAD_IPP placeholder; its placeholders: $HEAD_IP, $IFACE_NAME"
            in r.stderr)


def test_launch_of_plan_json_output_says_to_use_plan_out(tmp_path, env):
    f = tmp_path / "plan.json"
    f.write_text(json.dumps({"deploy_type": "single_node", "resolved": {},
                             "processes": [{"name": "vllm", "argv": ["vllm"]}]}))
    r = _cli(env, "launch", str(f), "--set", "HEAD_IP=1")
    assert r.returncode == 2 and "this looks like `plan --json` output" in r.stderr and "--out plan.yaml" in r.stderr
    assert "warning" not in r.stderr


@pytest.mark.parametrize("terminal", ["still open", "gone"])
def test_foreground_sighup_stops_every_child_cleanly(tmp_path, env, terminal):
    """Closing the terminal of ``launch --foreground`` (SIGHUP) is a clean stop, not the default action
    that would orphan the children; with the terminal gone (its
    output closed: writes fail with EPIPE, as EIO on a closed tty) the stop still completes."""
    from pathlib import Path

    from vllm_deploy_wizard.launcher.runs import read_run

    port = free_port()
    plan = _plan_file(tmp_path, port,
                      [{"name": "sleeper", "phase": "before", "argv": [PY, "-c", "import time; time.sleep(600)"]}])
    p = subprocess.Popen([sys.executable, "-m", "vllm_deploy_wizard", "launch", str(plan), "--foreground",
                          "--skip-flag-check"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines = []
    watchdog = threading.Timer(60, p.kill)  # never hang the suite if READY does not come
    watchdog.start()
    try:
        for line in p.stdout:
            lines.append(line)
            if line.startswith("web ") and "▸ READY" in line:  # names are padded to the longest
                break
    finally:
        watchdog.cancel()
    run_dir = Path(next(x for x in lines if x.startswith("run ")).rsplit("run dir ", 1)[1].strip())
    tree = [c.pid for c in psutil.Process(p.pid).children(recursive=True)]
    assert len(tree) >= 2, lines  # web and sleeper
    if terminal == "gone":
        p.stdout.close()
    p.send_signal(signal.SIGHUP)
    p.wait(timeout=30)
    out = "" if terminal == "gone" else p.stdout.read()
    assert p.returncode == 128 + signal.SIGHUP, out
    until_sync(lambda: not [x for x in tree
                            if psutil.pid_exists(x) and psutil.Process(x).status() != psutil.STATUS_ZOMBIE],
               10, "every child gone")
    assert read_run(run_dir).outcome == "stopped"
    if terminal == "still open":
        assert "run finished: stopped (supervisor received SIGHUP (terminal closed))" in out and "summary:" in out, out


def test_printer_hides_health_and_metrics_polls_unless_all_lines():
    """Health and metrics polls are not printed as access-log lines in ``attach`` / ``--foreground``."""
    from vllm_deploy_wizard.commands.launch import Printer
    from vllm_deploy_wizard.launcher import LogLines

    lines = ['INFO:     127.0.0.1:5012 - "GET /health HTTP/1.1" 200 OK',
             'INFO:     127.0.0.1:5014 - "GET /metrics HTTP/1.1" 200 OK',
             'INFO:     127.0.0.1:5016 - "GET /health HTTP/1.1" 503 Service Unavailable',
             'INFO:     127.0.0.1:5018 - "POST /v1/completions HTTP/1.1" 200 OK']
    buf = io.StringIO()
    Printer(["v"], out=buf, color=False)(LogLines("v", lines))
    assert buf.getvalue() == "".join(f"v | {x}\n" for x in lines[2:])
    buf = io.StringIO()
    Printer(["v"], out=buf, color=False, all_lines=True)(LogLines("v", lines))
    assert buf.getvalue() == "".join(f"v | {x}\n" for x in lines)
    # one definition: the TUI log pane hides the same lines
    from vllm_deploy_wizard.launcher.noise import POLL_NOISE
    from vllm_deploy_wizard.tui.monitor_model import POLL_NOISE as TUI_POLL_NOISE

    assert TUI_POLL_NOISE is POLL_NOISE


def test_foreground_printer_survives_a_closed_terminal_attach_printer_does_not():
    from vllm_deploy_wizard.commands.launch import Printer
    from vllm_deploy_wizard.launcher import LogLines

    class Closed(io.StringIO):
        def write(self, s):
            raise OSError(5, "Input/output error")  # EIO: a write to a hung-up tty

    fg = Printer(["v"], out=Closed(), color=False, drop_on_error=True)
    fg(LogLines("v", ["a"]))
    fg(LogLines("v", ["b"]))
    assert fg.broken
    with pytest.raises(OSError):
        Printer(["v"], out=Closed(), color=False)(LogLines("v", ["a"]))


FAKE_VLLM = """#!/bin/sh
if [ "$1" = "--version" ]; then echo 0.32.0+cpu; exit 0; fi
i=0; while [ $i -lt 30 ]; do echo "  --flag-$i"; i=$((i+1)); done
echo "  --max-num-seqs MAX_NUM_SEQS"
"""


def test_preflight_banner_says_whether_vllm_runs_and_prefix_flags_warn(tmp_path, env):
    """The '~30 s' banner only for a vLLM plan whose flags are not cached
    yet; an abbreviated flag vLLM would expand is a warning naming the expansion, not a refusal."""
    import socket

    fake = tmp_path / "bin" / "vllm"
    fake.parent.mkdir()
    fake.write_text(FAKE_VLLM)
    fake.chmod(0o755)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    plan = tmp_path / "v.yaml"
    plan.write_text(yaml.safe_dump({"plan_version": 1, "plan": {"processes": [
        {"name": "vllm", "role": "serve", "argv": [str(fake), "serve", "m", "--max-num-seq", "4"], "ports": [port]}]}}))
    r = _cli(env, "launch", str(plan))
    banner = [x for x in r.stderr.splitlines() if x.startswith("preflight:")]
    assert banner == ["preflight: ports, executables, files, memory, vLLM version and flags "
                      "(not cached yet: ~30 s per vLLM install) …"], r.stderr
    assert "preflight warning: 'vllm': vLLM expands --max-num-seq to --max-num-seqs; write it in full" in r.stderr
    assert r.returncode == 2 and f"port {port} (needed by 'vllm') is in use" in r.stderr and "no flag" not in r.stderr
    r = _cli(env, "launch", str(plan))
    assert ("preflight: ports, executables, files, memory, vLLM version and flags (cached) …"
            in r.stderr.splitlines()), r.stderr
    r = _cli(env, "launch", str(_plan_file(tmp_path, port)))  # python children only; refused on the busy port
    assert r.returncode == 2 and r.stderr.splitlines()[0] == "preflight: ports, executables, files, memory …", r.stderr
    busy.close()


def test_foreground_on_a_terminal_that_closes_stops_every_child(tmp_path, env):
    """SIGHUP as a person meets it: ``launch --foreground`` runs on a terminal (a pty whose
    controlling process it is) and the terminal goes away — the kernel sends SIGHUP and later
    writes fail with EIO. The run must stop cleanly all the same."""
    import fcntl
    import pty
    import termios
    from pathlib import Path

    from vllm_deploy_wizard.launcher.runs import read_run

    def own_the_terminal():  # in the child: new session (Popen), then make the pty its controlling tty
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    plan = _plan_file(tmp_path, free_port(),
                      [{"name": "sleeper", "phase": "before", "argv": [PY, "-c", "import time; time.sleep(600)"]}])
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "vllm_deploy_wizard", "launch", str(plan), "--foreground",
                          "--skip-flag-check"],
                         env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                         preexec_fn=own_the_terminal)
    os.close(slave)
    try:
        out = read_pty_until(master, lambda out: any(x.startswith(b"web ") and b"READY" in x for x in out.splitlines()),
                             60, "web READY on the terminal", alive=lambda: p.poll() is None)
    except BaseException:
        p.kill()
        raise
    run_dir = Path(next(x for x in out.decode().splitlines() if x.startswith("run ")).rsplit("run dir ", 1)[1].strip())
    tree = [c.pid for c in psutil.Process(p.pid).children(recursive=True)]
    os.close(master)  # the terminal is gone
    assert p.wait(timeout=30) == 128 + signal.SIGHUP
    until_sync(lambda: not [x for x in tree
                            if psutil.pid_exists(x) and psutil.Process(x).status() != psutil.STATUS_ZOMBIE],
               10, "every child gone")
    info = read_run(run_dir)
    assert info.outcome == "stopped"


def test_foreground_stopped_by_sigterm_exits_143(tmp_path, env):
    plan = _plan_file(tmp_path, free_port())
    p = subprocess.Popen([sys.executable, "-m", "vllm_deploy_wizard", "launch", str(plan), "--foreground",
                          "--skip-flag-check"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in p.stdout:
        if "▸ READY" in line:
            break
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 143 and "run finished: stopped" in out, out


@pytest.mark.parametrize("sigint_ignored", [False, True], ids=["terminal", "background-job-of-a-script"])
def test_wait_interrupted_says_the_run_goes_on_and_how_to_attach(tmp_path, env, sigint_ignored):
    """Ctrl-C (SIGINT) ends only the waiting — also where the command started with SIGINT ignored, as a
    background job of a non-interactive shell does."""

    # never READY (the server binds after 600 s): --wait waits until interrupted
    plan = _plan_file(tmp_path, free_port(), [])
    data = yaml.safe_load(plan.read_text())
    data["plan"]["processes"][0]["argv"][4] = "600"
    plan.write_text(yaml.safe_dump(data))
    disposition = signal.SIG_IGN if sigint_ignored else signal.SIG_DFL
    p = subprocess.Popen([sys.executable, "-m", "vllm_deploy_wizard", "launch", str(plan), "--wait",
                          "--skip-flag-check"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, disposition))
    first = [p.stdout.readline() for _ in range(2)]
    launched = next((x for x in first if x.startswith("launched run ")), None)
    assert launched, first
    run_id = launched.split()[2]
    until_sync(lambda: "STARTING" in json.dumps(_cli(env, "status", run_id, "--json").stdout), 30,
               "the run is starting")
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 130, out
    assert f"run {run_id} goes on" in out and f"vllm-wizard attach {run_id}" in out and "Traceback" not in out
    assert _cli(env, "stop", run_id).returncode == 0


def test_logs_hides_poll_lines_unless_all_lines(tmp_path):
    from vllm_deploy_wizard.commands.logs import shown_tail

    log = tmp_path / "vllm.log"
    polls = [f'INFO:     127.0.0.1:{5000 + i} - "GET /health HTTP/1.1" 200 OK' for i in range(300)]
    log.write_text("\n".join(["engine up", *polls[:150], "a real request line",
                              'INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 503 Service Unavailable',
                              *polls[150:]]) + "\n")
    lines, hidden = shown_tail(log, 3)
    assert lines == ["engine up", "a real request line",
                     'INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 503 Service Unavailable'] and hidden == 300
    lines, hidden = shown_tail(log, 3, all_lines=True)
    assert lines == polls[-3:] and hidden == 0
