"""The /dev/shm files of a run whose supervisor was killed: recorded in the run dir's shm.json as
the supervisor samples them, removed by stopping the stale run — exactly those, only when still the
same file (inode), owned by this user and held by no live process (docs/supervision.md §11).
Real children, polled to deadlines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

import psutil
import pytest
from children import PY, run_cli, until_sync
from engine_children import ENGINE_SERVER

from vllm_deploy_wizard.launcher import Probe, ProcessSpec, RunSpec, find_run, start_run
from vllm_deploy_wizard.launcher.ports import free_port
from vllm_deploy_wizard.launcher.shm import SHM_RECORD, RunShm, remove_recorded

#: Creates (O_CREAT) and holds open the file argv[1], prints "ok", then waits to be killed.
HOLDER = ("import os, sys, time; fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR); print('ok', flush=True); "
          "time.sleep(600)")


def _holder(path: Path) -> subprocess.Popen:
    p = subprocess.Popen([PY, "-c", HOLDER, str(path)], stdout=subprocess.PIPE)
    assert p.stdout.readline().strip() == b"ok"
    return p


def _record(path: Path, shm_dir: Path, files: dict[str, int]) -> None:
    path.write_text(json.dumps({"shm_dir": str(shm_dir), "processes": {"vllm": files}}))


class _Tree:
    """A process tree as the supervisor sees one: ``collect()`` → live processes with ``pid``."""

    def __init__(self, *procs: subprocess.Popen):
        self.procs = procs

    def collect(self):
        return [psutil.Process(p.pid) for p in self.procs if p.poll() is None]


def test_sampled_files_are_recorded_and_the_record_follows_the_cleanup(tmp_path):
    shm_dir, record = tmp_path / "shm", tmp_path / "run" / SHM_RECORD
    shm_dir.mkdir()
    record.parent.mkdir()
    run_shm = RunShm(shm_dir, record=record)
    ledger = run_shm.begin()
    child = _holder(shm_dir / "vllm_offload_e1.mmap")
    try:
        run_shm.started("vllm", ledger)
        run_shm.observe("vllm", _Tree(child))
        ino = (shm_dir / "vllm_offload_e1.mmap").stat().st_ino
        assert json.loads(record.read_text()) == {"shm_dir": str(shm_dir),
                                                  "processes": {"vllm": {"vllm_offload_e1.mmap": ino}}}
    finally:
        child.kill()
        child.wait()
    notes: list[str] = []
    assert run_shm.remove("vllm", notes.append) == [str(shm_dir / "vllm_offload_e1.mmap")]
    assert json.loads(record.read_text()) == {"shm_dir": str(shm_dir), "processes": {}}


def test_remove_recorded_takes_only_the_same_unheld_files(tmp_path):
    shm_dir, record = tmp_path / "shm", tmp_path / SHM_RECORD
    shm_dir.mkdir()
    left, held, replaced, unlisted = (shm_dir / n for n in ("left.mmap", "held.mmap", "replaced.mmap", "unlisted"))
    for f in (left, replaced, unlisted):
        f.write_bytes(b"x")
    old_ino = replaced.stat().st_ino
    (shm_dir / "new").write_bytes(b"y")  # made while the old one exists: another inode
    os.replace(shm_dir / "new", replaced)  # another start's file of the same name
    holder = _holder(held)
    try:
        listed = {"left.mmap": left.stat().st_ino, "held.mmap": held.stat().st_ino, "replaced.mmap": old_ino}
        _record(record, shm_dir, listed)
        assert remove_recorded(record) == [str(left)]
        assert not left.exists() and held.exists() and replaced.exists() and unlisted.exists()
        # the record keeps what could not go, for a later try
        kept = {"held.mmap": listed["held.mmap"], "replaced.mmap": old_ino}
        assert json.loads(record.read_text())["processes"] == {"vllm": kept}
    finally:
        holder.kill()
        holder.wait()
    assert remove_recorded(record) == [str(held)]  # no longer held
    record.write_text("{not json")
    assert remove_recorded(record) == []
    assert remove_recorded(tmp_path / "missing.json") == []


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm")
def test_cli_stop_of_a_stale_run_removes_the_shm_files_it_recorded(env, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", env["XDG_STATE_HOME"])
    mine = f"vllm_offload_stale{uuid.uuid4().hex}.mmap"
    other = Path("/dev/shm") / f"vllm_offload_notours{uuid.uuid4().hex}.mmap"
    other.write_bytes(b"x")  # present before the run: never its file
    port = free_port()
    spec = RunSpec((ProcessSpec(
        name="vllm", argv=(PY, "-c", ENGINE_SERVER, str(port), "ok", "0", mine),
        probe=Probe(f"http://127.0.0.1:{port}/health", interval_s=0.2), ports=(port,), stop_timeout_s=3,
    ),))
    try:
        info = start_run(spec)
        record = info.run_dir / SHM_RECORD
        until_sync(lambda: record.exists() and mine in record.read_text(), 30, f"{SHM_RECORD} listing {mine}")
        child = find_run(info.run_id).processes[0]["pid"]
        os.kill(info.pid, signal.SIGKILL)
        until_sync(lambda: find_run(info.run_id).status == "stale", 10, "run reported stale")
        assert (Path("/dev/shm") / mine).exists()  # the supervisor is gone, its child still holds the file
        out = run_cli(env, "stop", info.run_id)
        assert out.returncode == 0, out.stdout + out.stderr
        assert f"run {info.run_id}: removed /dev/shm files its processes left: /dev/shm/{mine}" in out.stdout
        assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
        assert not (Path("/dev/shm") / mine).exists() and other.exists()
        assert f"/dev/shm/{mine}" in json.loads((info.run_dir / "state.json").read_text())["note"]
    finally:
        (Path("/dev/shm") / mine).unlink(missing_ok=True)
        other.unlink(missing_ok=True)
