"""The detached supervisor: :data:`ENTRY` ``RUN_DIR`` (spec JSON on stdin).

Why a separate process: closing the terminal or losing SSH (SIGHUP) must not kill the server.
:func:`start_run` starts it with ``subprocess.Popen(start_new_session=True)`` — a new
session has no controlling terminal, so no SIGHUP reaches it, and SIGHUP is ignored anyway. The
full spec (secrets included) travels over the child's stdin, never through a file; ``spec.json``
in the run directory has secrets masked.

The entry is ``python -c "from vllm_deploy_wizard.launcher.daemon import main; …"`` rather than
``python -m vllm_deploy_wizard.launcher.daemon``: the package ``__init__`` imports this module, so
``-m`` would execute it a second time and start every supervisor.log with runpy's
RuntimeWarning.

Start-up order (runs.py): the launcher records the supervisor's pid in supervisor.json at once;
the supervisor writes state.json, then creates the control socket; :func:`start_run` returns
once the socket exists, so whoever sees the socket also sees the state.

Control: a unix socket ``RUN_DIR/control.sock`` (the run dir is 0700, so only its owner can
connect) speaking JSON lines. Requests: ``{"op": "subscribe", "tail": N}`` → a ``snapshot``
message (state + the last N log lines per process) then every message as it happens
(``event``/``log``/``metrics``/``progress``/``finished``); ``{"op": "status"}`` → one snapshot;
``{"op": "stop"}``; ``{"op": "restart", "name": …}``; each command is answered ``{"type": "ok"}``
or ``{"type": "error", "message": …}``. A subscriber that cannot keep up (its queue of
:data:`CLIENT_QUEUE` messages is full) is disconnected rather than ever slowing the supervisor.

SIGTERM/SIGINT to the daemon stop the run cleanly. The same :func:`serve` runs in-process for
``vllm-wizard launch --foreground``, so ``attach``/``status``/``stop`` work on foreground runs too.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.launcher.runs import RunInfo, new_run_dir, read_run, record_supervisor, write_state_json
from vllm_deploy_wizard.launcher.shm import SHM_RECORD, RunShm
from vllm_deploy_wizard.launcher.spec import RunSpec
from vllm_deploy_wizard.launcher.states import ProcessEvent
from vllm_deploy_wizard.launcher.supervisor import Message, Supervisor

#: Messages buffered per subscriber before it is dropped.
CLIENT_QUEUE = 4096
#: Seconds between refreshes of the recorded process trees in state.json (environment
#: ``VLLM_WIZARD_TREE_REFRESH_S`` overrides it for the supervisor it is set for).
TREE_REFRESH_S = 10.0


def tree_refresh_s() -> float:
    """Seconds between tree refreshes: ``$VLLM_WIZARD_TREE_REFRESH_S`` when a positive number, else
    :data:`TREE_REFRESH_S`."""
    try:
        value = float(os.environ.get("VLLM_WIZARD_TREE_REFRESH_S", ""))
    except ValueError:
        return TREE_REFRESH_S
    return value if value > 0 else TREE_REFRESH_S
#: The supervisor's command line before ``RUN_DIR`` (no runpy double import, see the module docstring).
ENTRY = ("-c", "from vllm_deploy_wizard.launcher.daemon import main; raise SystemExit(main())")


@contextmanager
def short_socket_path(path: Path) -> Iterator[str]:
    """A path usable for ``bind``/``connect`` even when ``path`` exceeds the 107-byte AF_UNIX limit.

    Long paths go through ``/proc/self/fd/<dirfd>/<name>`` (Linux), which resolves to the same file.
    """
    s = str(path)
    if len(s.encode()) < 100:
        yield s
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def encode(msg: Message | dict[str, Any]) -> bytes:
    """One JSON line for ``msg`` (a supervisor message or a plain dict)."""
    data = msg if isinstance(msg, dict) else msg.to_dict()
    return (json.dumps(data, default=str) + "\n").encode()


class RunServer:
    """Supervisor + run directory bookkeeping + control socket for one run."""

    def __init__(self, run_dir: Path, spec: RunSpec, extra_listeners: list[Callable[[Message], None]] | None = None):
        self.run_dir = run_dir
        self.spec = spec
        self.sup = Supervisor(spec, log_dir=run_dir / "logs", listeners=[self._on_message, *(extra_listeners or [])],
                              on_spawned=self._on_spawned, shm=RunShm(record=run_dir / SHM_RECORD))
        self.clients: set[asyncio.Queue] = set()
        self.started = time.time()
        self._events = open(run_dir / "events.jsonl", "a")
        me = psutil.Process()
        self.me = {"pid": me.pid, "create_time": me.create_time()}

    # ---- bookkeeping
    def write_state(self) -> None:
        """Rewrite state.json from the supervisor's snapshot."""
        snap = self.sup.snapshot()
        write_state_json(self.run_dir / "state.json", {
            "run_id": self.run_dir.name,
            "supervisor": self.me,
            "started": self.started,
            "updated": time.time(),
            "source": self.spec.source,
            **snap,
        })

    def _on_message(self, msg: Message) -> None:
        # clients first (latency of what a person sees), bookkeeping after
        if self.clients:
            line = encode(msg)
            for q in list(self.clients):
                try:
                    q.put_nowait(line)
                except asyncio.QueueFull:  # too slow a reader: drop it, never block the supervisor
                    self.clients.discard(q)
                    while not q.empty():
                        q.get_nowait()
                    q.put_nowait(encode({"type": "error", "message": "client too slow: disconnected; attach again"}))
                    q.put_nowait(None)
        if isinstance(msg, ProcessEvent):
            self._events.write(json.dumps(msg.to_dict(), default=str) + "\n")
            self._events.flush()
            for mp in self.sup.handles.values():
                if mp.returncode is None:
                    mp.collect()
            self.write_state()

    def _on_spawned(self, name: str) -> None:
        """A (re)started process exists: record its pid, pgid, create_time and tree at once (the
        STARTING event was written before the spawn, without a pid)."""
        mp = self.sup.handles.get(name)
        if mp is not None and mp.returncode is None:
            mp.collect()
        self.write_state()

    # ---- control socket
    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            raw = await reader.readline()
            req = json.loads(raw or b"{}")
            op = req.get("op")
            if op in ("status", "subscribe"):
                snap = self.sup.snapshot()
                tail_n = int(req.get("tail", 0) or 0)
                snap["tail"] = {n: log.last(tail_n) for n, log in self.sup.logs.items()} if tail_n else {}
                snap.update(type="snapshot", run_id=self.run_dir.name, supervisor=self.me, started=self.started)
                writer.write(encode(snap))
                await writer.drain()
                if op == "subscribe":
                    await self._stream(reader, writer)
            elif op == "stop":
                self.sup.stop(req.get("reason") or "stop requested by a client")
                writer.write(encode({"type": "ok"}))
            elif op == "restart":
                try:
                    self.sup.restart(str(req.get("name")))
                    writer.write(encode({"type": "ok"}))
                except KeyError:
                    names = ", ".join(p.name for p in self.spec.processes)
                    writer.write(encode({"type": "error",
                                         "message": f"no process {req.get('name')!r}; processes: {names}"}))
            else:
                writer.write(encode({"type": "error",
                                     "message": f"unknown op {op!r}; valid: subscribe, status, stop, restart"}))
            await writer.drain()
        except (ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    async def _stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        q: asyncio.Queue = asyncio.Queue(CLIENT_QUEUE)
        self.clients.add(q)
        eof = asyncio.ensure_future(reader.read())  # the client closing its side ends the stream
        try:
            while True:
                get = asyncio.ensure_future(q.get())
                done, _ = await asyncio.wait({get, eof}, return_when=asyncio.FIRST_COMPLETED)
                if get not in done:
                    get.cancel()
                    return
                line = get.result()
                if line is None:
                    return
                writer.write(line)
                await writer.drain()
        finally:
            eof.cancel()
            self.clients.discard(q)

    async def serve(self) -> str:
        """Run the supervisor and the control socket until the run finishes; return the outcome."""
        sock = self.run_dir / "control.sock"
        sock.unlink(missing_ok=True)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.sup.stop, f"supervisor received {signal.Signals(sig).name}")
        self.write_state()  # before the socket appears: whoever sees the socket also sees the state
        old_umask = os.umask(0o077)  # the socket is created 0600 (and the run dir is 0700 anyway)
        # Bind under a temporary name and rename once listening: bind creates the file before
        # listen, and a client connecting in between is refused (seen under load). So control.sock
        # exists only when it accepts, which is what start_run waits for.
        staging = sock.with_name(f".control-{os.getpid()}.sock")
        staging.unlink(missing_ok=True)
        try:
            with short_socket_path(staging) as addr:
                server = await asyncio.start_unix_server(self._client, addr)
            os.replace(staging, sock)
        finally:
            os.umask(old_umask)
        refresher = loop.create_task(self._refresh())
        try:
            outcome = await self.sup.run()
        finally:
            refresher.cancel()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            self.write_state()
            for q in list(self.clients):
                if not q.full():
                    q.put_nowait(None)
            await asyncio.sleep(0.05)  # let streams flush the final message
            server.close()
            sock.unlink(missing_ok=True)
            self._events.close()
        return outcome

    async def _refresh(self) -> None:
        while True:
            await asyncio.sleep(tree_refresh_s())
            for mp in list(self.sup.handles.values()):
                if mp.returncode is None:
                    mp.collect()
            self.write_state()


def prepare_run_dir(spec: RunSpec) -> Path:
    """New run directory with ``spec.json`` (secret env values masked), after writing the plan's
    config files the spec carries (``launcher/config_files.py``: before any process starts; raises
    LaunchError naming a file that cannot be written, and then creates no run)."""
    from vllm_deploy_wizard.launcher.config_files import write_config_files
    from vllm_deploy_wizard.launcher.logs import Redactor, secret_argv_values

    write_config_files(spec)
    d = new_run_dir()
    data = spec.to_dict()
    red = Redactor({k: v for p in spec.processes for k, v in p.env.items()},
                   [v for p in spec.processes for v in secret_argv_values(p.argv)])
    for p in data["processes"]:
        p["env"] = red.env(p["env"])
        p["argv"] = [red.text(a) for a in p["argv"]]
    write_state_json(d / "spec.json", data)
    return d


def spawn_supervisor(run_dir: Path) -> subprocess.Popen:
    """Start the detached supervisor of ``run_dir`` (own session, cwd ``/``, output appended to
    ``supervisor.log``) and record it in ``supervisor.json``. Its stdin is a pipe left open: the
    supervisor waits for the spec JSON there (write it, then close; see :func:`start_run`)."""
    log = open(run_dir / "supervisor.log", "ab")
    try:
        proc = subprocess.Popen(
            [sys.executable, *ENTRY, str(run_dir)],
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True, cwd="/",
        )
    finally:
        log.close()
    record_supervisor(run_dir, proc.pid)
    return proc


def start_run(spec: RunSpec, detach: bool = True, timeout: float = 20.0) -> RunInfo:
    """Start a detached supervisor for ``spec`` (contracts §3); return its :class:`RunInfo` once the
    control socket answers. ``detach=False`` is not served here (use ``launch --foreground``).

    Raises :class:`LaunchError` with the supervisor's own log when it dies or does not come up
    within ``timeout`` seconds.
    """
    if not detach:
        raise LaunchError("start_run(detach=False) is not supported; run RunServer(...).serve() in-process")
    run_dir = prepare_run_dir(spec)
    proc = spawn_supervisor(run_dir)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(spec.to_dict()).encode())
    proc.stdin.close()
    deadline = time.monotonic() + timeout
    sock = run_dir / "control.sock"
    while not sock.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            text = (run_dir / "supervisor.log").read_text(errors="replace")[-2000:]
            if proc.poll() is None:
                proc.kill()
            raise LaunchError(f"the supervisor did not start (run dir {run_dir}):\n{text}")
        time.sleep(0.02)
    info = read_run(run_dir)
    info.pid = proc.pid
    return info


def main(argv: list[str] | None = None) -> int:
    """Entry of the detached supervisor: ``RUN_DIR`` argument, spec JSON on stdin."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(f"usage: python {' '.join(repr(a) for a in ENTRY)} RUN_DIR  (spec JSON on stdin)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    run_dir = Path(args[0])
    record_supervisor(run_dir, os.getpid())  # "starting", not stale, until state.json exists
    spec = RunSpec.from_dict(json.loads(sys.stdin.read()))
    sys.stdin.close()
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    outcome = asyncio.run(RunServer(run_dir, spec).serve())
    print(f"run finished: {outcome}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
