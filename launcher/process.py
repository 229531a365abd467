"""OS processes: spawn in an own session, signal and kill whole trees, verify nothing survives.

The hazard this module exists for (docs/supervision.md §9): SIGKILL of vLLM's API
server orphans EngineCore and Worker, which keep running (and keep GPU memory). So:

* every child starts in its own session (``start_new_session=True``): its process group id equals
  its pid, and every descendant that does not call setsid itself stays in that group even after its
  parent died;
* before signalling, the tree is *collected* (psutil descendants of the main process ∪ members of
  its process group, each remembered with its create_time so a recycled pid is never hit);
* stop = the stop signal to the group and to each collected process, wait, then SIGKILL to every
  one still alive; :meth:`ManagedProcess.survivors` then says whether anything is left;
* with NVML available (lazily imported, never required), :func:`gpu_memory_held` tells whether the
  stopped pids still hold GPU memory.

``CUDA_DEVICE_ORDER=PCI_BUS_ID`` is set for every child so device indices match detection and
``nvidia-smi`` (docs/supervision.md: observation).
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field

import psutil

from vllm_deploy_wizard.launcher.spec import ProcessSpec

#: StreamReader limit for child output; lines longer than this are still handled (logs.py reads chunks).
STREAM_LIMIT = 1 << 20


def child_env(spec: ProcessSpec, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for the child: ``base`` (default ``os.environ``) + ``spec.env`` + GPU ordering."""
    env = dict(os.environ if base is None else base)
    env.update(spec.env)
    env.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    return env


def group_members(pgid: int, leader_create_time: float | None = None) -> list[psutil.Process]:
    """Every live process whose process group is ``pgid`` (zombies excluded).

    With ``leader_create_time`` the group must still be *ours*: if a process with pid ``pgid``
    exists but started at another time, the id was recycled for someone else's group and nothing
    is returned. (While any member of our group lives, Linux does not hand its id out again.)
    """
    if leader_create_time is not None:
        try:
            if abs(psutil.Process(pgid).create_time() - leader_create_time) > 0.5:
                return []
        except psutil.Error:
            pass
    out = []
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (ProcessLookupError, psutil.Error, PermissionError):
            continue
    return out


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@dataclass
class ManagedProcess:
    """A spawned child and the tree it grew.

    ``pid``/``pgid``/``create_time`` identify it (create_time in epoch seconds, psutil's),
    ``proc`` is the asyncio process whose ``stdout`` carries stdout+stderr merged.
    ``known`` remembers every descendant ever collected: ``{pid: create_time}``.
    """

    proc: asyncio.subprocess.Process
    pid: int
    pgid: int
    create_time: float
    known: dict[int, float] = field(default_factory=dict)
    exited: asyncio.Future[int] | None = None
    reader: PipeReader | None = None

    @property
    def stdout(self) -> PipeReader | asyncio.StreamReader | None:
        """Merged stdout/stderr of the child: anything with ``await read(n)`` (None for a fake)."""
        return self.reader if self.reader is not None else self.proc.stdout

    @property
    def returncode(self) -> int | None:
        """Exit status once the main process ended (even while orphans keep the pipe open)."""
        return self.proc.returncode

    async def wait(self) -> int:
        """Wait for the main process to exit; its status (negative = killed by that signal).

        Unlike ``asyncio.subprocess.Process.wait`` this does not also wait for the output pipe to
        close — orphaned grandchildren (vLLM's EngineCore) may hold it open for a long time.
        """
        if self.exited is not None:
            return await asyncio.shield(self.exited)
        return await self.proc.wait()

    def collect(self) -> list[psutil.Process]:
        """The current tree: main process, its descendants, its group members, previously known ones.

        Each returned process is alive and verified against its recorded create_time.
        """
        procs: dict[int, psutil.Process] = {}
        try:
            main = psutil.Process(self.pid)
            if abs(main.create_time() - self.create_time) < 0.5 and _alive(main):
                procs[main.pid] = main
                for c in main.children(recursive=True):
                    procs[c.pid] = c
        except psutil.Error:
            pass
        for p in group_members(self.pgid, self.create_time):
            procs.setdefault(p.pid, p)
        for pid, ct in list(self.known.items()):
            if pid in procs:
                continue
            try:
                p = psutil.Process(pid)
                if abs(p.create_time() - ct) < 0.5 and _alive(p):
                    procs[pid] = p
            except psutil.Error:
                pass
        for pid, p in procs.items():
            try:
                self.known.setdefault(pid, p.create_time())
            except psutil.Error:
                pass
        return [p for p in procs.values() if _alive(p)]

    def signal_tree(self, sig: int) -> list[int]:
        """Collect the tree, then send ``sig`` to the group and to each member outside it; returns
        the pids signalled (group members reached by ``killpg`` included — counting only the
        per-process sends missed those that the group signal had already ended).
        """
        tree = self.collect()
        in_group = set()
        for p in tree:
            try:
                if os.getpgid(p.pid) == self.pgid:
                    in_group.add(p.pid)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            in_group = set()
        hit = []
        for p in tree:
            if p.pid in in_group:
                hit.append(p.pid)
                continue
            try:
                p.send_signal(sig)
                hit.append(p.pid)
            except psutil.Error:
                pass
        return hit

    def kill_tree(self) -> list[int]:
        """SIGKILL the whole tree (collected first); returns the pids killed."""
        return self.signal_tree(signal.SIGKILL)

    def survivors(self) -> list[psutil.Process]:
        """Processes of the tree still alive (the main one excluded once it was reaped)."""
        return [p for p in self.collect() if not (p.pid == self.pid and self.proc.returncode is not None)]

    async def reap(self, timeout: float, sig: int = signal.SIGTERM, poll: float = 0.05) -> list[int]:
        """Stop whatever of the tree is still alive: ``sig``, wait ``timeout`` s, SIGKILL, wait.

        Returns the pids that were still alive at the start (empty = nothing to reap). Used after
        the main process died on its own (orphaned EngineCore/Worker) and to finish a stop.
        """
        left = [p.pid for p in self.survivors()]
        if not left:
            return []
        self.signal_tree(sig)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.survivors() and loop.time() < deadline:
            await asyncio.sleep(poll)
        if self.survivors():
            self.kill_tree()
            deadline = loop.time() + 5.0
            while self.survivors() and loop.time() < deadline:
                await asyncio.sleep(poll)
        return left


async def spawn_process(spec: ProcessSpec, env: Mapping[str, str] | None = None) -> ManagedProcess:
    """Start ``spec.command()`` in its own session with stdout+stderr merged into one pipe.

    The pipe is ours (not asyncio's transport): :class:`PipeReader` reads it only when the log
    pump asks, so between two reads a chatty child fills the enlarged (1 MiB) pipe without waking
    the supervisor for every write. ``env`` defaults to :func:`child_env`. Raises
    ``FileNotFoundError``/``PermissionError`` when the executable is missing or not executable
    (the supervisor turns that into a classified exit).
    """
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[int] = loop.create_future()
    rfd, wfd = os.pipe()
    _grow_pipe(rfd)
    try:
        transport, protocol = await loop.subprocess_exec(
            lambda: _Protocol(exited, STREAM_LIMIT, loop),
            *spec.command(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=wfd,
            stderr=asyncio.subprocess.STDOUT,
            env=dict(env) if env is not None else child_env(spec),
            cwd=spec.cwd,
            start_new_session=True,
        )
    except BaseException:
        os.close(rfd)
        raise
    finally:
        os.close(wfd)
    proc = asyncio.subprocess.Process(transport, protocol, loop)
    try:
        ct = psutil.Process(proc.pid).create_time()
    except psutil.Error:
        ct = 0.0
    return ManagedProcess(proc=proc, pid=proc.pid, pgid=proc.pid, create_time=ct, exited=exited,
                          reader=PipeReader(rfd))


#: Pipe capacity asked for the child's output (Linux F_SETPIPE_SZ; capped by fs.pipe-max-size).
PIPE_SIZE = 1 << 20


def _grow_pipe(fd: int) -> None:
    """Enlarge the pipe of ``fd`` so a chatty child rarely waits for the reader (best effort)."""
    import fcntl

    if hasattr(fcntl, "F_SETPIPE_SZ"):
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        except OSError:
            pass


class PipeReader:
    """Non-blocking reader of a pipe's read end: ``await read(n)`` → up to ``n`` bytes, ``b""`` at EOF.

    It registers with the event loop only while a read is waiting, so unread output simply stays
    in the pipe. Reads go into one preallocated buffer (``os.readv``) and only the bytes read are
    copied out: ``os.read(fd, 1 MiB)`` allocates and maps a fresh 1 MiB each call, which measurably
    slows a flooding child on the other core (bench/bench_launcher.py: a drain-only reader went
    from 75 % to 81 % of /dev/null speed). :meth:`close` closes the descriptor (idempotent).
    """

    def __init__(self, fd: int):
        self.fd = fd
        self._buf = bytearray()
        os.set_blocking(fd, False)

    def _read(self, n: int) -> bytes:
        if len(self._buf) < n:
            self._buf = bytearray(n)
        view = memoryview(self._buf)[:n]
        try:
            got = os.readv(self.fd, [view])
            return bytes(view[:got])
        finally:
            view.release()

    async def read(self, n: int) -> bytes:
        """The next bytes available, at most ``n`` (waits until some are, or EOF)."""
        loop = asyncio.get_running_loop()
        while True:
            if self.fd < 0:
                return b""
            try:
                return self._read(n)
            except BlockingIOError:
                fut: asyncio.Future[None] = loop.create_future()
                loop.add_reader(self.fd, _wake, fut)
                try:
                    await fut
                finally:
                    if self.fd >= 0:
                        loop.remove_reader(self.fd)

    def close(self) -> None:
        """Close the read end."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _wake(fut: asyncio.Future[None]) -> None:
    """Resolve ``fut`` unless it already is (the reader callback of :meth:`PipeReader.read`)."""
    if not fut.done():
        fut.set_result(None)


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Stream protocol that also resolves a future the moment the main process exits."""

    def __init__(self, exited: asyncio.Future[int], limit: int, loop: asyncio.AbstractEventLoop):
        super().__init__(limit=limit, loop=loop)
        self._exited_fut = exited
        self._process_transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Keep the subprocess transport (whose return code :meth:`process_exited` reads)."""
        super().connection_made(transport)
        if isinstance(transport, asyncio.SubprocessTransport):
            self._process_transport = transport

    def process_exited(self) -> None:
        transport = self._process_transport
        rc = transport.get_returncode() if transport is not None else None
        super().process_exited()
        if not self._exited_fut.done():
            self._exited_fut.set_result(rc if rc is not None else -1)


def _local_ips(host: str) -> set[str] | None:
    """The IP strings ``host`` stands for when it is this machine (loopback or one of its interface
    addresses); None for another machine or a name that does not resolve."""
    import ipaddress
    import socket

    if host in ("localhost", ""):
        return {"127.0.0.1", "::1"}
    try:
        ips = {str(ipaddress.ip_address(host.strip("[]")))}
    except ValueError:
        try:
            ips = {str(ai[4][0]) for ai in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
        except OSError:
            return None
    local = {a.address.split("%")[0] for addrs in psutil.net_if_addrs().values() for a in addrs}
    if all(ipaddress.ip_address(ip).is_loopback or ip in local or ip in ("0.0.0.0", "::") for ip in ips):
        return ips
    return None


def listening_pids(host: str, port: int) -> set[int] | None:
    """Pids of the processes with a TCP socket listening where a client of ``host:port`` connects
    (the address itself or a wildcard 0.0.0.0/::), from ``psutil.net_connections(kind="inet")``.

    None when that cannot be told: ``host`` is another machine, the OS refuses the table
    (``AccessDenied``), nobody listens there, or no listener shows a pid (another user's process
    seen without privileges). Used so a readiness probe answered by somebody else's server does not
    count.
    """
    ips = _local_ips(host)
    if ips is None:
        return None
    accept = ips | {"0.0.0.0", "::"} | {f"::ffff:{ip}" for ip in ips}
    try:
        conns = psutil.net_connections(kind="inet")
    except (psutil.AccessDenied, PermissionError):
        return None
    pids = {c.pid for c in conns
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.laddr.ip in accept}
    if not pids or None in pids:
        return None
    return {pid for pid in pids if pid is not None}


#: Container clients: the port of a process started through them is held by the runtime
#: (docker-proxy, the container's own pid under containerd-shim, rootlessport…), never by the tree.
CONTAINER_CLIENTS = frozenset({"docker", "podman", "nerdctl"})


def foreign_listener(url: str, mp: ManagedProcess, argv: tuple[str, ...] | list[str] = ()) -> str | None:
    """When the socket answering probe ``url`` is held only by processes outside ``mp``'s tree:
    ``"port N is answered by pid P (cmd) which is not part of this process"``; None when the tree
    holds it, the holder cannot be determined, or ``argv`` runs a container client
    (:data:`CONTAINER_CLIENTS`, also behind ``sudo``) — then the probe counts, as before."""
    from urllib.parse import urlsplit

    if any(os.path.basename(a) in CONTAINER_CLIENTS for a in list(argv)[:2]):
        return None
    u = urlsplit(url)
    try:
        port = u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        return None
    holders = listening_pids(u.hostname or "localhost", port)
    if holders is None:
        return None
    tree = {p.pid for p in mp.collect()} | {mp.pid}
    if holders & tree:
        return None
    pid = min(holders)
    try:
        cmd = " ".join(psutil.Process(pid).cmdline())[:200] or psutil.Process(pid).name()
    except psutil.Error:
        cmd = "?"
    return f"port {port} is answered by pid {pid} ({cmd}) which is not part of this process"


def gpu_memory_held(pids: set[int], baseline: dict[str, int] | None = None) -> dict[int, int] | None:
    """Accelerator memory (bytes) still held by any of ``pids``, per pid, from NVML, amdsmi and
    npu-smi (:mod:`.devmem`); None when none of them answers. ``baseline``: per-device use recorded
    at launch in a container, where pids do not match (memory above it is reported under pid 0)."""
    from vllm_deploy_wizard.launcher import devmem

    return devmem.memory_held(pids, baseline)
