"""Shared pieces of the multi-node end-to-end tests: the real environment, a two-node plan, runs on hosts.

A "host" is a network namespace (:mod:`netns_hosts`); each host gets its own state directory
(``XDG_STATE_HOME``), as separate machines would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from e2e_env import E2EUnavailable, tiny_model, vllm_env
from netns_hosts import Host
from polling import wait_until

#: Seconds the two nodes get to become READY: two vLLM nodes take ~100 s on a loaded 2-core box.
READY_S = 420.0
#: The vLLM arguments the CPU build and the tiny model need (docs/supervision.md §9).
CPU_ARGS = ["--arg=--max-model-len 256", "--arg=--enforce-eager", "--arg=--dtype float32"]
WIZARD = [sys.executable, "-m", "vllm_deploy_wizard"]


def real_env() -> dict[str, Path]:
    """The vLLM CPU build and the tiny model, or ``pytest.skip`` with why not."""
    try:
        return {"vllm": vllm_env(), "model": tiny_model()}
    except E2EUnavailable as exc:
        pytest.skip(f"real environment unavailable: {exc}")


def write_plan(path: Path, model: Path, nodes: int = 2) -> Path:
    """``vllm-wizard plan`` of ``multi_node_tp`` with ``nodes`` nodes and 1 device per node → ``path``.

    Planned from the head for the test hosts, off-node: a custom model on the restricted Xeon 6
    profile is an unverified choice (rule H1), so the plan is asked for with ``--allow-unverified``."""
    r = subprocess.run([*WIZARD, "plan", "--model", str(model), "--hardware", "xeon6", "--strategy", "multi_node_tp",
                        "--nodes", str(nodes), "--gpus", "1", "--allow-unverified", *CPU_ARGS, "--out", str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return path


def host_env(real: dict[str, Path], state: Path) -> dict[str, str]:
    """Environment of a wizard command on one host: vLLM on PATH, that host's state dir, offline."""
    return dict(os.environ, PATH=f"{real['vllm']}:{os.environ['PATH']}", XDG_STATE_HOME=str(state), NO_COLOR="1",
                HF_HUB_OFFLINE="1", VLLM_CPU_KVCACHE_SPACE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1")


def launch_on(host: Host, env: dict[str, str], plan: Path, node: str, *extra: str) -> Path:
    """``vllm-wizard launch PLAN --node NODE`` (detached) inside ``host``; returns the run directory."""
    r = subprocess.run(host.argv(*WIZARD, "launch", str(plan), "--node", node, "--skip-flag-check", *extra),
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"launch on {host.name} failed:\n{r.stdout}\n{r.stderr}"
    m = re.search(r"run dir (\S+)", r.stdout)
    assert m, r.stdout
    return Path(m.group(1))


def processes(run_dir: Path) -> dict[str, dict]:
    """``{name: process dict}`` of a run's state.json ({} while not written)."""
    try:
        return {p["name"]: p for p in json.loads((run_dir / "state.json").read_text())["processes"]}
    except (OSError, ValueError, KeyError):
        return {}


def causes(run_dir: Path) -> dict[str, dict]:
    """``{process: its newest cause}`` from a run's events.jsonl (a cause shows in state.json only
    while the process is in BACKOFF/FATAL, which may last a second)."""
    out: dict[str, dict] = {}
    try:
        text = (run_dir / "events.jsonl").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict) and ev.get("cause"):
            out[ev["name"]] = ev["cause"]
    return out


def wait_for(cond: Callable[[], bool], timeout: float, what: str, runs: list[Path] = ()) -> float:
    """Poll ``cond`` every 0.5 s (tests/polling.py); seconds it took, or AssertionError naming ``what``
    with the runs' states."""
    def states() -> str:
        return "runs: " + str({str(r.name): {n: (p["state"], (p.get("cause") or {}).get("summary"))
                                             for n, p in processes(r).items()} for r in runs})

    return wait_until(cond, timeout, what, interval=0.5, detail=states)


def all_ready(runs: list[Path]) -> Callable[[], bool]:
    """True when every process of every run is READY."""
    return lambda: all((ps := processes(r)) and all(p["state"] == "READY" for p in ps.values()) for r in runs)


def netns_pids(host: Host) -> list[int]:
    """Pids of the processes still running inside ``host``'s network namespace."""
    out = subprocess.run(["ip", "netns", "pids", host.netns], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def wizard_left(hosts: list[Host], daemons: tuple[str, ...] = ("slurmd", "sshd")) -> list[str]:
    """vLLM / wizard processes still running in ``hosts`` (the test's own ``daemons`` excluded)."""
    import psutil

    out = []
    for h in hosts:
        for pid in netns_pids(h):
            try:
                proc = psutil.Process(pid)
                cmd = " ".join(proc.cmdline())
                name = proc.name()
            except psutil.Error:
                continue
            if not any(d in cmd for d in daemons) and ("vllm" in cmd.lower() or "VLLM" in name):
                out.append(f"{h.name}: {pid} {cmd[:120]}")
    return out


def stop_on(host: Host, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    """``vllm-wizard stop --all`` on ``host``."""
    return subprocess.run(host.argv(*WIZARD, "stop", "--all", "--timeout", "30"), env=env, capture_output=True,
                          text=True, timeout=timeout)


def kill_namespace(host: Host) -> None:
    """SIGKILL whatever still runs in ``host`` (teardown of a failed test)."""
    for pid in netns_pids(host):
        try:
            os.kill(pid, 9)
        except OSError:
            pass
