"""Scripts for real child processes (run with ``sys.executable -c``) and polling helpers.

Shared by the launcher tests; no fixed sleeps — everything is polled to a deadline.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

from polling import wait_until, wait_until_async

PY = sys.executable

#: Serves GET /health (200) on 127.0.0.1:<argv[1]> after <argv[2]> seconds; prints a line per request.
#: argv[3] == "ignore-term": ignores SIGTERM. argv[4] == "grandchild": starts a sleeping grandchild
#: (printing its pid as "GRANDCHILD <pid>") in the same process group.
HEALTH_SERVER = r"""
import http.server, os, signal, subprocess, sys, time
port, delay = int(sys.argv[1]), float(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else ""
if mode == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if len(sys.argv) > 4 and sys.argv[4] == "grandchild":
    g = subprocess.Popen([sys.executable, "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN) if %r else None; "
        "time.sleep(600)" % (mode == "ignore-term")])
    print("GRANDCHILD", g.pid, flush=True)
print("starting; token", os.environ.get("HF_TOKEN", "-"), flush=True)
if sys.argv[5:6] == ["--api-key"]:  # echo like vLLM's "non-default args" line does
    print("non-default args:", {"api_key": sys.argv[6:]}, flush=True)
time.sleep(delay)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 200 if self.path in ("/health", "/healthcheck") else 404
        body = b"vllm:num_requests_running 1.0\n" if self.path == "/metrics" else b"ok"
        if self.path == "/metrics":
            code = 200
        self.send_response(code); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer.allow_reuse_address = True
srv = http.server.HTTPServer(("127.0.0.1", port), H)
print("listening", port, flush=True)
srv.serve_forever()
"""

#: Prints its argv[2] then exits with status int(argv[1]).
FAIL = r"""
import sys
print("loading model", flush=True)
print(sys.argv[2], flush=True)
sys.exit(int(sys.argv[1]))
"""

#: Prints one line of int(argv[1]) bytes, then "END", then sleeps until killed.
LONG_LINE = r"""
import sys, time
sys.stdout.write("x" * int(sys.argv[1]) + "\n"); sys.stdout.write("END\n"); sys.stdout.flush()
time.sleep(600)
"""


#: The launcher tests' waits (tests/polling.py): ``until`` in coroutines, ``until_sync`` elsewhere.
until, until_sync = wait_until_async, wait_until


def read_pty_until(master: int, done: Callable[[bytes], bool], timeout: float, what: str,
                   alive: Callable[[], bool] = lambda: True) -> bytes:
    """Read the pseudo-terminal ``master`` fd (made non-blocking) until ``done(output so far)``;
    returns the output. ``AssertionError`` naming ``what`` and the output's tail after ``timeout``
    s, or as soon as the terminal closed (EIO) or ``alive()`` is false before ``done``."""
    os.set_blocking(master, False)
    out = bytearray()

    def check() -> bool:
        closed = False
        try:
            while chunk := os.read(master, 4096):
                out.extend(chunk)
        except BlockingIOError:
            pass
        except OSError:  # EIO: every writer of the terminal is gone
            closed = True
        if done(bytes(out)):
            return True
        if closed or not alive():
            raise AssertionError(f"the terminal closed before {what}: {bytes(out)[-2000:]!r}")
        return False

    wait_until(check, timeout, what, interval=0.05, detail=lambda: f"output: {bytes(out)[-2000:]!r}")
    return bytes(out)


def run_cli(env: dict, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m vllm_deploy_wizard ARGS`` with ``env``; output captured as text; ``timeout`` in s."""
    return subprocess.run([sys.executable, "-m", "vllm_deploy_wizard", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def cleanup_runs(state_home) -> list[str]:
    """Stop whatever a test left running under ``state_home`` (an ``XDG_STATE_HOME``): SIGTERM each
    live supervisor (it stops its children), then stop any recorded survivor. Returns the ids of
    runs that needed it, so a failing test never leaks supervisors into the next ones."""
    from pathlib import Path

    import psutil

    from vllm_deploy_wizard.launcher.runs import read_run, run_survivors, stop_stale

    root = Path(state_home) / "vllm-wizard" / "runs"
    cleaned = []
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        info = read_run(d)
        if info.status in ("running", "starting") and info.pid:
            cleaned.append(info.run_id)
            try:
                sup = psutil.Process(info.pid)
                sup.terminate()
                sup.wait(30)
            except psutil.Error:
                pass
            info = read_run(d)
        if info.status != "finished" and run_survivors(info):
            cleaned.append(info.run_id)
            stop_stale(info, timeout=5)
    return cleaned
