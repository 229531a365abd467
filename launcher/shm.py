"""Shared-memory files a run's processes leave in ``/dev/shm`` (docs/supervision.md §11).

vLLM keeps engine state in ``/dev/shm``: its KV offload region ``vllm_offload_<engine_id>.mmap``
(vLLM 0.32.0 ``vllm/v1/kv_offload/cpu/shared_offload_region.py``: created ``O_EXCL`` by the first
worker, unlinked only once every worker mapped it), ``vllm_ec_<engine_id>.mmap``
(``vllm/distributed/ec_transfer/ec_connector/cpu/ec_shared_region.py``) and the POSIX shared memory
of its message queues (``vllm/distributed/device_communicators/shm_broadcast.py``). A tree killed
during start-up leaves them behind; the next start with the same engine id then finds the file and
fails. So each start gets a :class:`ShmLedger`:

* at spawn, the regular files in ``/dev/shm`` owned by this user (name → inode) are recorded;
* while the tree lives (and right before it is signalled) every ``/dev/shm`` path its processes
  hold open (``/proc/PID/fd``) or mapped (``/proc/PID/maps``) is recorded;
* after the tree is gone (before a restart, after a stop) :meth:`ShmLedger.remove_leftovers`
  deletes the recorded files that still exist with the same inode, are owned by this user, were
  not there before the start, and that no live process holds — so another run's files, another
  user's, and anything present before this start are never touched.

A file created and abandoned between two samples by a process that died in that gap is not seen;
sampling is every second while a process is young.

The supervisor of a run started by the launcher also keeps what it sampled in the run directory
(:data:`SHM_RECORD`, rewritten atomically whenever it changes), so a run whose supervisor was
killed still names its files: stopping the stale run (:func:`remove_recorded`, called by
``runs.stop_stale``) removes exactly those that still exist with the same inode, are owned by this
user and that no live process holds.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from vllm_deploy_wizard.launcher.runs import write_state_json

#: Seconds between two samples of a live tree's /dev/shm files.
SHM_SAMPLE_S = 1.0
#: Where POSIX shared memory and vLLM's mmap regions live (tmpfs on Linux).
SHM_DIR = Path("/dev/shm")
#: The file in a run directory recording the /dev/shm files its processes' current starts hold:
#: ``{"shm_dir": str, "processes": {process name: {file name: inode}}}``.
SHM_RECORD = "shm.json"


def owned_entries(shm_dir: Path = SHM_DIR, uid: int | None = None) -> dict[str, int]:
    """``{name: inode}`` of the regular files directly in ``shm_dir`` owned by ``uid`` (default: ours);
    ``{}`` when the directory is missing or unreadable."""
    uid = os.getuid() if uid is None else uid
    out: dict[str, int] = {}
    try:
        it = os.scandir(shm_dir)
    except OSError:
        return out
    with it:
        for e in it:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if e.is_file(follow_symlinks=False) and st.st_uid == uid:
                out[e.name] = st.st_ino
    return out


def held_paths(pids: Iterable[int], shm_dir: Path = SHM_DIR) -> dict[str, int]:
    """``{name: inode}`` of the files in ``shm_dir`` that processes ``pids`` hold open or mapped now
    (from ``/proc/PID/fd`` and ``/proc/PID/maps``; processes that are gone or unreadable are skipped;
    files already unlinked are left out)."""
    prefix = str(shm_dir).rstrip("/") + "/"
    names: set[str] = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith(prefix) and not target.endswith(" (deleted)"):
                    names.add(target[len(prefix):])
        except OSError:
            pass
        try:
            with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    i = line.find(prefix)
                    if i >= 0 and not line.rstrip().endswith("(deleted)"):
                        names.add(line[i + len(prefix):].rstrip("\n"))
        except OSError:
            pass
    out: dict[str, int] = {}
    for name in names:
        if "/" in name:
            continue
        try:
            out[name] = os.lstat(shm_dir / name).st_ino
        except OSError:
            continue
    return out


def _held_by_anyone(paths: dict[str, int], shm_dir: Path) -> set[str]:
    """The names of ``paths`` that any readable live process holds open or mapped (same inode)."""
    if not paths:
        return set()
    pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    held = held_paths(pids, shm_dir)
    return {n for n, ino in paths.items() if held.get(n) == ino}


def _removable(paths: dict[str, int], shm_dir: Path, uid: int) -> list[Path]:
    """The files of ``paths`` (``{name: inode}``) that still exist in ``shm_dir`` with that inode,
    owned by ``uid``, and that no live process holds; sorted by name."""
    now = owned_entries(shm_dir, uid)
    cand = {n: ino for n, ino in paths.items() if "/" not in n and now.get(n) == ino}
    busy = _held_by_anyone(cand, shm_dir)
    return [shm_dir / n for n in sorted(cand) if n not in busy]


def _unlink_all(paths: list[Path]) -> tuple[list[str], set[str]]:
    """Unlink ``paths``: (the paths removed now, the names gone afterwards — removed or already missing)."""
    removed, gone = [], set()
    for path in paths:
        try:
            path.unlink()
            removed.append(str(path))
        except FileNotFoundError:
            pass
        except OSError:
            continue
        gone.add(path.name)
    return removed, gone


@dataclass
class ShmLedger:
    """The ``/dev/shm`` files of one start of one process (module docstring).

    ``before``: ``{name: inode}`` owned by this user at spawn; ``seen``: ``{name: inode}`` its tree
    was observed holding. ``uid``: the owner files must have to be removed.
    """

    before: dict[str, int]
    shm_dir: Path = SHM_DIR
    uid: int = field(default_factory=os.getuid)
    seen: dict[str, int] = field(default_factory=dict)

    @classmethod
    def at_spawn(cls, shm_dir: Path = SHM_DIR) -> ShmLedger:
        """A ledger recording what is in ``shm_dir`` now (call right before the spawn)."""
        return cls(before=owned_entries(shm_dir), shm_dir=shm_dir)

    def observe(self, pids: Iterable[int]) -> None:
        """Record the ``/dev/shm`` files ``pids`` (the tree's live processes) hold now."""
        for name, ino in held_paths(pids, self.shm_dir).items():
            if self.before.get(name) != ino:
                self.seen[name] = ino

    def leftovers(self) -> list[Path]:
        """Recorded files still present, same inode, owned by ``uid``, absent before the start, held by nobody."""
        fresh = {n: ino for n, ino in self.seen.items() if self.before.get(n) != ino}
        return _removable(fresh, self.shm_dir, self.uid)

    def remove_leftovers(self) -> list[str]:
        """Delete :meth:`leftovers`; returns the paths removed (forgotten from ``seen`` either way)."""
        removed, gone = _unlink_all(self.leftovers())
        for name in gone:
            self.seen.pop(name, None)
        return removed


class RunShm:
    """The :class:`ShmLedger` of each process of a run (its current start), for the supervisor.

    ``shm_dir``: where to look (``/dev/shm``; tests may point elsewhere). Trees are anything with
    ``collect()`` → live processes with ``pid`` (:class:`~vllm_deploy_wizard.launcher.process.ManagedProcess`).
    ``record``: a file (a run directory's :data:`SHM_RECORD`) rewritten atomically with the sampled
    files whenever they change, for :func:`remove_recorded`; None keeps them in memory only.
    """

    def __init__(self, shm_dir: Path = SHM_DIR, record: Path | None = None):
        self.shm_dir = shm_dir
        self.record = record
        self.ledgers: dict[str, ShmLedger] = {}
        self._lock = threading.Lock()  # observe runs in worker threads
        self._saved: dict | None = None

    def recorded(self) -> dict:
        """What :data:`SHM_RECORD` holds: ``{"shm_dir": str, "processes": {name: {file: inode}}}``."""
        return {"shm_dir": str(self.shm_dir),
                "processes": {n: dict(sorted(led.seen.items())) for n, led in sorted(self.ledgers.items()) if led.seen}}

    def save(self) -> None:
        """Rewrite ``record`` when what was sampled changed since the last write (never raises)."""
        if self.record is None:
            return
        with self._lock:
            try:
                data = self.recorded()
                if data != self._saved:
                    write_state_json(self.record, data)
                    self._saved = data
            except Exception:  # noqa: BLE001 - bookkeeping must never stop supervision; the next sample retries
                pass

    def begin(self) -> ShmLedger:
        """A ledger of what is there now (right before a spawn); :meth:`started` files it under a name."""
        return ShmLedger.at_spawn(self.shm_dir)

    def started(self, name: str, ledger: ShmLedger) -> None:
        """``ledger`` is the current start of process ``name``."""
        self.ledgers[name] = ledger
        self.save()

    def observe(self, name: str, tree) -> None:
        """Record what the live ``tree`` of ``name`` holds now (never raises)."""
        ledger = self.ledgers.get(name)
        if ledger is not None:
            try:
                ledger.observe([x.pid for x in tree.collect()])
                self.save()
            except Exception:  # noqa: BLE001 - bookkeeping must never stop supervision
                pass

    def remove(self, name: str, note) -> list[str]:
        """Remove what the ended start of ``name`` left; ``note(text)`` is told which files went."""
        ledger = self.ledgers.get(name)
        removed = ledger.remove_leftovers() if ledger is not None else []
        self.save()
        if removed:
            note(f"removed /dev/shm files its processes left: {', '.join(removed)}")
        return removed

    async def track(self, name: str, tree, alive) -> None:
        """Sample ``tree`` every :data:`SHM_SAMPLE_S` seconds while ``alive()``."""
        import asyncio

        while alive():
            await asyncio.to_thread(self.observe, name, tree)
            await asyncio.sleep(SHM_SAMPLE_S)


def remove_recorded(record: Path) -> list[str]:
    """Remove the files a run's :data:`SHM_RECORD` ``record`` lists (its supervisor is gone): those
    that still exist with the recorded inode, are owned by this user and that no live process holds.

    Returns the paths removed. The record is rewritten without them (the others stay listed, for a
    later try). A missing or malformed record removes nothing.
    """
    try:
        data = json.loads(record.read_text())
        shm_dir = Path(data["shm_dir"])
        procs = {str(n): {str(f): int(ino) for f, ino in files.items()} for n, files in data["processes"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return []
    paths = {f: ino for files in procs.values() for f, ino in files.items()}
    removed, gone = _unlink_all(_removable(paths, shm_dir, os.getuid()))
    if gone:
        left = {n: {f: i for f, i in files.items() if f not in gone} for n, files in procs.items()}
        try:
            write_state_json(record, {"shm_dir": str(shm_dir), "processes": {n: f for n, f in left.items() if f}})
        except OSError:
            pass  # the next try finds the removed files gone
    return removed
