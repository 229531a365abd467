"""Run commands of the CLI: an unusable state dir, causes in ``status`` and ``vllm-wizard logs`` for
finished runs, ``vllm-wizard restart``, stale-run wording. Real commands in subprocesses, polled to deadlines."""

from __future__ import annotations

import json
import os
import signal

import psutil
import pytest
import yaml
from children import HEALTH_SERVER, PY, run_cli, until_sync

from vllm_deploy_wizard.launcher.ports import free_port

#: What vLLM prints for `vllm serve /nonexistent/model` (0.32 CPU build), then exit 1.
HF_FAIL = r"""
import sys
print("INFO 11-30 12:30:01 [api_server.py:1] vLLM API server version 0.32.0", flush=True)
print("Traceback (most recent call last):", flush=True)
print("huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
      "'namespace/repo_name': '/nonexistent/model'. Use `repo_type` argument if needed.", flush=True)
print("During handling of the above exception, another exception occurred:", flush=True)
sys.exit(1)
"""


_cli = run_cli  # the `env` fixture is in conftest.py


def _plan(tmp_path, procs) -> str:
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump({"plan_version": 1, "plan": {"processes": procs, "placeholders": []}}))
    return str(f)


def _web(port):
    return {"name": "web", "role": "serve", "argv": [PY, "-c", HEALTH_SERVER, str(port), "0"], "ports": [port],
            "health": {"url": f"http://127.0.0.1:{port}/health", "expect_status": 200, "interval_s": 0.2},
            "stop": {"timeout_s": 5}}


@pytest.mark.parametrize("kind", ["file", "proc"])
def test_an_unusable_state_dir_is_a_clear_error_not_a_traceback(tmp_path, env, kind):
    if kind == "file":
        bad = tmp_path / "statefile"
        bad.write_text("not a directory")
    else:
        bad = "/proc/nope"
    env = dict(env, XDG_STATE_HOME=str(bad))
    for args in (["status"], ["stop"], ["logs"], ["launch", _plan(tmp_path, [_web(free_port())])]):
        r = _cli(env, *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        assert f"{bad}/vllm-wizard/runs" in r.stderr and "set XDG_STATE_HOME to a writable directory" in r.stderr
        assert ("Not a directory" if kind == "file" else "No such file or directory") in r.stderr


def test_fatal_run_status_shows_cause_fix_and_log_and_logs_prints_it(tmp_path, env):
    plan = _plan(tmp_path, [{"name": "vllm", "role": "serve", "argv": [PY, "-c", HF_FAIL],
                             "restart": {"mode": "on-failure", "max_failures": 2, "backoff_initial_s": 0.05}}])
    r = _cli(env, "launch", plan, "--foreground")
    assert r.returncode == 1, r.stdout + r.stderr
    run_id = json.loads(_cli(env, "status", "--all", "--json").stdout)[0]["run_id"]
    st = _cli(env, "status", "--all").stdout
    assert "cause: the model '/nonexistent/model' could not be found — fix: check the model" in st, st
    log = f"{tmp_path}/state/vllm-wizard/runs/{run_id}/logs/vllm.log"
    assert f"log: {log}" in st
    # logs: newest run by default, finished included
    r = _cli(env, "logs")
    assert r.returncode == 0 and f"run {run_id}  finished (fatal)" in r.stdout
    # a missing model is deterministic: FATAL after one start, so the error is printed once
    assert sum(line.startswith("huggingface_hub.errors.HFValidationError") for line in r.stdout.splitlines()) == 1
    r = _cli(env, "logs", run_id[:12], "vllm", "-n", "2")
    body = r.stdout.splitlines()[2:]
    assert r.returncode == 0 and len(body) == 2 and "→ FATAL: exited with status 1" in body[-1]
    r = _cli(env, "logs", "vllm", "-n", "1")  # a lone process name: of the newest run
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 3
    r = _cli(env, "logs", run_id, "nope")
    assert r.returncode == 2 and "has no process 'nope'; processes: vllm" in r.stderr
    r = _cli(env, "logs", "zzz")
    assert r.returncode == 2 and "matches no run" in r.stderr and run_id in r.stderr
    # attach on the finished run points at logs
    r = _cli(env, "attach", run_id)
    assert r.returncode == 2 and f"vllm-wizard logs {run_id}" in r.stderr


def test_restart_a_process_of_a_running_run(tmp_path, env):
    port = free_port()
    r = _cli(env, "launch", _plan(tmp_path, [_web(port)]), "--wait")
    assert r.returncode == 0, r.stdout + r.stderr
    st = json.loads(_cli(env, "status", "--json").stdout)[0]
    run_id, old = st["run_id"], st["processes"][0]["pid"]
    r = _cli(env, "restart", run_id)  # one argument: the process of the newest run — run ids are no process
    assert r.returncode == 2 and "no process" in r.stderr and "processes: web" in r.stderr
    r = _cli(env, "restart")
    assert r.returncode == 2 and "name the process to restart" in r.stderr and "web" in r.stderr
    r = _cli(env, "restart", run_id[:12], "web")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "web ▸ STARTING" in r.stdout and "web ▸ READY" in r.stdout
    new = json.loads(_cli(env, "status", "--json").stdout)[0]["processes"][0]
    assert new["state"] == "READY" and new["pid"] != old and new["restarts"] == 1
    until_sync(lambda: not psutil.pid_exists(old) or psutil.Process(old).status() == psutil.STATUS_ZOMBIE, 10,
               "the old process gone")
    assert _cli(env, "restart", "web", "--no-wait").returncode == 0
    assert _cli(env, "stop").returncode == 0


def test_stale_run_shows_orphaned_processes_and_counts_agree(tmp_path, env):
    # a server and a shell with two sleeping children (one process group)
    port = free_port()
    sleeper = {"name": "sleeper", "role": "companion", "phase": "before",
               "argv": ["bash", "-c", "sleep 1000 & sleep 1000 & wait"]}
    r = _cli(env, "launch", _plan(tmp_path, [_web(port), sleeper]), "--wait")
    assert r.returncode == 0, r.stdout + r.stderr
    st = json.loads(_cli(env, "status", "--json").stdout)[0]
    os.kill(st["supervisor_pid"], signal.SIGKILL)
    until_sync(lambda: json.loads(_cli(env, "status", "--json").stdout)[0]["status"] == "stale", 15, "stale")
    r = _cli(env, "status")
    lines = r.stdout.splitlines()
    assert any(line.split()[:2] == ["web", "ORPHANED"] for line in lines), r.stdout
    assert not any(line.split()[1:2] == ["READY"] for line in lines[1:]), r.stdout
    n = len(json.loads(_cli(env, "status", "--json").stdout)[0]["stale_survivors"])
    assert n == 4 and f"supervisor is gone but {n} processes still run" in r.stdout
    r = _cli(env, "attach")
    assert r.returncode == 2 and f"{n} of its processes still run" in r.stderr
    r = _cli(env, "stop", "--timeout", "5")
    assert r.returncode == 0 and f"stopped {n} leftover processes" in r.stdout
    r = _cli(env, "status", "--all")
    assert "finished (stopped)" in r.stdout


def test_signal_note_counts_every_group_member_signalled(tmp_path, env):
    sleeper = {"name": "sleeper", "role": "companion", "argv": ["bash", "-c", "sleep 1000 & sleep 1000 & wait"]}
    r = _cli(env, "launch", _plan(tmp_path, [sleeper]), "--wait")
    assert r.returncode == 0, r.stdout + r.stderr
    st = json.loads(_cli(env, "status", "--json").stdout)[0]
    pid = st["processes"][0]["pid"]
    until_sync(lambda: len(psutil.Process(pid).children()) == 2, 10, "two sleeps started")
    assert _cli(env, "stop").returncode == 0
    log = (tmp_path / "state" / "vllm-wizard" / "runs" / st["run_id"] / "logs" / "sleeper.log").read_text()
    assert "(3 processes)" in log, log


def test_wait_returns_when_a_one_shot_job_finished_and_the_server_is_ready(tmp_path, env):
    """A one-shot companion (no probe) exiting 0 is done, not 'not READY yet'."""
    port = free_port()
    oneshot = {"name": "oneshot", "role": "companion", "phase": "before", "argv": [PY, "-c", "print('prepared')"]}
    r = _cli(env, "launch", _plan(tmp_path, [oneshot, _web(port)]), "--wait", timeout=45)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all 2 processes READY (1 one-shot finished)" in r.stdout
    assert _cli(env, "stop").returncode == 0
