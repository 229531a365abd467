"""Run directories: what outlives the terminal (docs/supervision.md: Runs that outlive the terminal).

Layout of ``<user_state_dir("vllm-wizard")>/runs/<run_id>/`` (mode 0700; the state dir follows
``XDG_STATE_HOME`` through platformdirs)::

    spec.json        the RunSpec with secret env values masked (what was launched)
    state.json       supervisor pid + create_time, every process: state, pid, create_time, pgid,
                     tree {pid: create_time}, ports, cause… (rewritten atomically on each event
                     and right after each (re)start has spawned the process)
    events.jsonl     every state change, one JSON object a line
    logs/<name>.log  full output of each process (rotated: .1 .2 …)
    supervisor.log   the supervisor's own stderr
    supervisor.json  supervisor pid + create_time, written as soon as it is started (before state.json)
    shm.json         the /dev/shm files each process's current start holds (name → inode), rewritten
                     atomically as the supervisor samples them (launcher/shm.py, docs/supervision.md §11)
    control.sock     the supervisor's control socket (JSON lines; see daemon.py) while it runs

:func:`process_logs` and :func:`log_tail` read the log files of any run, live or finished
(``vllm-wizard logs``), without the supervisor.

Start-up order (so that no reader ever sees a healthy run as stale): the launcher makes the
directory and spec.json, starts the supervisor and records it in supervisor.json; the supervisor
writes state.json, *then* creates control.sock. A run whose supervisor is alive but has not
written state.json yet — or whose directory is younger than :data:`STARTING_GRACE_S` and has no
supervisor yet — is *starting*, never stale.

A run whose supervisor died (SIGKILL, OOM) without recording an outcome is *stale*: its children
may still run unseen. :func:`run_survivors` finds them from the recorded pids *and* create times
(a recycled pid is never touched) plus the recorded process groups (vLLM's orphaned
EngineCore/Worker stay in the group of the API server), and :func:`stop_stale` stops them and
removes the /dev/shm files shm.json lists (same inode, owned by this user, held by no live process).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from vllm_deploy_wizard.common import appdirs, files
from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.launcher.timeouts import STALE_KILL_WAIT_S, STALE_STOP_TIMEOUT_S


def runs_root() -> Path:
    """``<user_state_dir("vllm-wizard")>/runs``, created with mode 0700.

    Raises :class:`LaunchError` naming the directory, the OS error and the fix (a writable
    ``XDG_STATE_HOME``) when it cannot be created or used — ``XDG_STATE_HOME`` pointing at a file,
    at /proc, a read-only or full disk.
    """
    root = appdirs.state_dir() / "runs"
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(root.parent, 0o700)
        os.chmod(root, 0o700)
    except OSError as exc:
        xdg = os.environ.get("XDG_STATE_HOME")
        where = f"XDG_STATE_HOME={xdg}" if xdg else "the default state directory"
        raise LaunchError(
            f"cannot use the run directory {root} ({where}): {exc.strerror or exc}"
            f"{f' ({exc.filename})' if exc.filename and str(exc.filename) != str(root) else ''}; "
            "set XDG_STATE_HOME to a writable directory (e.g. export XDG_STATE_HOME=$HOME/.local/state)"
        ) from None
    return root


def new_run_dir() -> Path:
    """Create a fresh run directory (mode 0700) named ``YYYYmmdd-HHMMSS-xxxx`` and return it."""
    root = runs_root()
    run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
    d = root / run_id
    d.mkdir(mode=0o700)
    (d / "logs").mkdir(mode=0o700)
    return d


#: A run directory this young without any supervisor recorded is still being set up (s).
STARTING_GRACE_S = 30.0


def record_supervisor(run_dir: Path, pid: int) -> None:
    """Write ``supervisor.json`` (pid + create_time) for the supervisor of ``run_dir``.

    Called by the launcher right after starting it and by the supervisor itself, before it has
    any state to write; :func:`read_run` uses it until state.json exists. A pid that is already
    gone is recorded without a create time (it then reads as not alive).
    """
    try:
        ct: float | None = psutil.Process(pid).create_time()
    except psutil.Error:
        ct = None
    write_state_json(run_dir / "supervisor.json", {"pid": pid, "create_time": ct})


def write_state_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` via a temp file + rename (readers never see half a file).

    Each writer gets its own temp file (``mkstemp``), so two processes writing the same file
    (launcher and supervisor both record supervisor.json) never rename each other's half-written
    one. No fsync: state.json is rewritten on every event, and a lost last write is recovered from
    the live processes.
    """
    files.write_json_atomic(path, data, fsync=False)


def _proc_matches(pid: int | None, create_time: float | None) -> psutil.Process | None:
    if not pid:
        return None
    try:
        p = psutil.Process(int(pid))
        if create_time is not None and abs(p.create_time() - float(create_time)) > 0.5:
            return None
        if p.status() == psutil.STATUS_ZOMBIE:
            return None
        return p
    except psutil.Error:
        return None


@dataclass
class RunInfo:
    """One run (contracts §3): ``run_id``, ``run_dir``, supervisor ``pid``; ``status`` is
    ``starting`` (supervisor started but no state yet, or not started yet in a brand-new run
    dir), ``running`` (supervisor alive with state), ``stale`` (supervisor gone, no outcome
    recorded) or ``finished``; ``outcome`` stopped | exited | fatal | None; ``processes`` as
    recorded in state.json."""

    run_id: str
    run_dir: Path
    pid: int | None
    status: str = "running"
    outcome: str | None = None
    started: float | None = None
    processes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def socket(self) -> Path:
        """Path of the control socket."""
        return self.run_dir / "control.sock"


def read_run(run_dir: Path) -> RunInfo:
    """The :class:`RunInfo` of ``run_dir`` from its state.json, or supervisor.json before that
    exists (status computed from the live OS; see the module docstring for *starting*)."""
    state = _read_json(run_dir / "state.json")
    sup = state.get("supervisor") or _read_json(run_dir / "supervisor.json")
    alive = _proc_matches(sup.get("pid"), sup.get("create_time")) is not None
    outcome = state.get("outcome")
    if outcome:
        status = "finished"
    elif alive:
        status = "running" if state else "starting"
    elif not state and not sup and _age(run_dir) < STARTING_GRACE_S:
        status = "starting"  # the launcher has made the directory and is starting the supervisor
    else:
        status = "stale"
    return RunInfo(
        run_id=run_dir.name, run_dir=run_dir, pid=sup.get("pid"), status=status, outcome=outcome,
        started=state.get("started"), processes=list(state.get("processes") or []),
    )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _age(run_dir: Path) -> float:
    try:
        return time.time() - run_dir.stat().st_mtime
    except OSError:
        return float("inf")


def list_runs(include_finished: bool = True) -> list[RunInfo]:
    """Every run under :func:`runs_root`, newest first, including stale ones (contracts §3)."""
    out = [read_run(d) for d in runs_root().iterdir() if d.is_dir()]
    out.sort(key=lambda r: r.run_id, reverse=True)
    return [r for r in out if include_finished or r.status != "finished"]


def find_run(ref: str | None = None) -> RunInfo:
    """The run named ``ref`` (id or unique prefix); without ``ref`` the newest running, starting or stale run.

    Raises :class:`LaunchError` naming the candidates when nothing or more than one matches.
    """
    runs = list_runs()
    if ref:
        hits = [r for r in runs if r.run_id == ref] or [r for r in runs if r.run_id.startswith(ref)]
        if len(hits) == 1:
            return hits[0]
        ids = ", ".join(r.run_id for r in (hits or runs)[:10]) or "none"
        what = "matches several runs" if hits else "matches no run"
        raise LaunchError(f"run {ref!r} {what}; runs: {ids}")
    active = [r for r in runs if r.status in ("running", "starting", "stale")]
    if not active:
        raise LaunchError("no running run; start one with `vllm-wizard launch PLAN` (`vllm-wizard status` lists runs)")
    return active[0]


def run_survivors(info: RunInfo) -> list[psutil.Process]:
    """Processes of ``info`` still alive: recorded pids and trees (create time verified) and the
    members of the recorded process groups. Never includes the calling process."""
    found: dict[int, psutil.Process] = {}
    for proc in info.processes:
        for q in process_survivors(proc):
            found.setdefault(q.pid, q)
    return list(found.values())


def process_survivors(proc: dict[str, Any]) -> list[psutil.Process]:
    """Live processes of one recorded process (a state.json ``processes`` entry): its pid and tree
    (create time verified) and the members of its process group. Never the calling process."""
    from vllm_deploy_wizard.launcher.process import group_members

    found: dict[int, psutil.Process] = {}
    p = _proc_matches(proc.get("pid"), proc.get("create_time"))
    if p is not None:
        found[p.pid] = p
    for pid, ct in (proc.get("tree") or {}).items():
        q = _proc_matches(int(pid), ct)
        if q is not None:
            found[q.pid] = q
    pgid = proc.get("pgid")
    if pgid:
        for q in group_members(int(pgid), proc.get("leader_create_time")):
            found.setdefault(q.pid, q)
    found.pop(os.getpid(), None)
    return list(found.values())


def stop_stale(info: RunInfo, timeout: float = STALE_STOP_TIMEOUT_S,
               note: Callable[[str], None] | None = None) -> list[int]:
    """Stop what a dead supervisor left running: SIGTERM, wait ``timeout`` s, SIGKILL the rest;
    then remove the /dev/shm files the run's shm.json lists (:func:`~vllm_deploy_wizard.launcher.shm.remove_recorded`:
    same inode, owned by this user, held by no live process; ``note(text)`` is told which).

    Returns the pids that were found alive. Records ``outcome: "stopped"`` (with a note naming the
    processes and the files removed) in state.json so the run no longer shows as stale.
    """
    from vllm_deploy_wizard.launcher.shm import SHM_RECORD, remove_recorded

    procs = run_survivors(info)
    for p in procs:
        try:
            p.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass
    _gone, alive = psutil.wait_procs(procs, timeout=timeout)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=STALE_KILL_WAIT_S)
    removed = remove_recorded(info.run_dir / SHM_RECORD)
    shm_note = f"removed /dev/shm files its processes left: {', '.join(removed)}" if removed else ""
    if shm_note and note is not None:
        note(shm_note)
    path = info.run_dir / "state.json"
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        state = {"processes": info.processes}
    state["outcome"] = "stopped"
    state["note"] = f"supervisor was gone; stopped {len(procs)} leftover processes"
    if shm_note:
        state["note"] += f"; {shm_note}"
    for proc in state.get("processes") or []:
        proc["state"] = "STOPPED"
        proc["pid"] = None
    write_state_json(path, state)
    return [p.pid for p in procs]


def process_logs(info: RunInfo) -> dict[str, Path]:
    """``{process name: log file}`` of run ``info``, in plan order (names from spec.json, else
    state.json, else the files in ``logs/``). A file may not exist yet (process not started)."""
    names = [p.get("name") for p in (_read_json(info.run_dir / "spec.json").get("processes") or [])]
    names = [n for n in names if isinstance(n, str)] or [p.get("name") for p in info.processes if p.get("name")]
    logs = info.run_dir / "logs"
    if not names:
        names = sorted(f.name[:-4] for f in logs.glob("*.log")) if logs.is_dir() else []
    return {n: logs / f"{n.replace('/', '_')}.log" for n in names}


def log_tail(path: Path, n: int, block: int = 1 << 16) -> list[str]:
    """The last ``n`` lines of a process log ``path``, reaching into its rotated files (``.1`` is the
    newest older one) when the current file has fewer. Reads backwards in ``block``-byte steps, so
    a 50 MiB log costs only what is shown. Missing files count as empty; undecodable bytes are
    replaced. Lines without their newline."""
    if n <= 0:
        return []
    out: list[str] = []
    files = [path] + [path.with_name(f"{path.name}.{i}") for i in range(1, 100)]
    for f in files:
        if not f.exists():
            if f is path:
                continue
            break
        need = n - len(out)
        out = _file_tail(f, need, block) + out
        if len(out) >= n:
            break
    return out[-n:]


def _file_tail(path: Path, n: int, block: int) -> list[str]:
    try:
        with open(path, "rb") as fh:
            end = fh.seek(0, os.SEEK_END)
            pos, data = end, b""
            while pos > 0 and data.count(b"\n") <= n:
                step = min(block, pos)
                pos -= step
                fh.seek(pos)
                data = fh.read(step) + data
    except OSError:
        return []
    # split at \n only: a line ending in \r is a progress update the next line replaces (logs.UPDATE_MARK)
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if pos > 0:
        lines = lines[1:]  # the first line read may be cut
    return lines[-n:]
