"""The wizard's start-up: the catalog load and detection in a forked child while Textual starts, and
the garbage collector paused until the first usable screen (docs/architecture.md §4 "Wizard start-up").

Why (issue #21's target: the first usable screen — the detected profile preselected — within 1.5×
a one-Static Textual app, ``bench/bench_terminal_start.py``):

- **The loads run beside Textual, not after it.** Importing Textual takes ~125 ms of CPU; loading
  the catalog (the bundled cache), detecting the node and matching its profile take ~110 ms more
  (their imports included). In thread workers they could only start once the first frame was on
  screen and then shared one interpreter lock with the painting. :meth:`StartLoads.start` forks a
  child *before* Textual is imported, which runs :func:`start_frames` on the other core and sends
  what the hardware screen shows as plain data (:class:`~vllm_deploy_wizard.tui.hardware_view.HardwareFacts`:
  strings and tuples, which unpickle without importing the catalog or detect packages) down a
  pipe. The hardware screen takes what has arrived when it mounts — on a CPU node the child is
  done by then (it has ~150 ms while Textual is imported), so the first frame is the usable one —
  and never waits for more: what comes later (on a GPU node NVML or amdsmi can take seconds to
  start) is painted when it arrives, the profile list first if the catalog frame came alone.
- **The app's own state comes from the same loads.** The child also sends the pickled Inventory;
  the app unpickles it in a worker (no second NVML start, and what is shown is what is planned
  with). The app loads the catalog itself in a worker after the first frame (it needs the whole
  catalog; the child's facts need only its hardware profiles). Both go through the same
  :class:`~vllm_deploy_wizard.tui.services.Services` functions as without the child, and the screen
  repaints nothing when the app's facts equal the child's.
- **The garbage collector waits.** Start-up allocates a few hundred thousand objects (Textual's
  modules, the CSS, the widgets); each automatic collection walks them all again. Measured in tmux,
  collections took ~55 of the ~125 ms of CPU from Textual's import to the first frame.
  :func:`pause_gc` stops automatic collection before Textual is imported; :func:`resume_gc` starts
  it again once the first usable screen is painted, or after :data:`GC_PAUSE_MAX_S` at the latest.
  Reference counting frees almost everything meanwhile; only reference cycles wait.

Without ``os.fork`` (Windows), with ``VLLM_WIZARD_START_CHILD=0``, or when the child fails (it is
killed, a load raises something it cannot send), the app falls back to loading in its own workers,
as the tests' apps always do. Nothing here imports Textual.
"""

from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Seconds the first start-up load to finish waits for the other before it is shown on its own (the
#: app's ``_load_done``; the start-up child's catalog frame, :func:`start_frames`): on a workstation
#: both are in well within it, so the first screen is painted once, in its final order; a slow
#: detection (GPU driver init) still lets the profile list show early.
PARTIAL_SETTLE_S = 0.25

#: Seconds after :func:`pause_gc` at which the garbage collector runs again even when the first
#: usable screen never came (a detection that hangs, a failed load).
GC_PAUSE_MAX_S = 5.0

#: Environment variable that turns the start-up child off (``0``); any other value or unset: on.
CHILD_ENV = "VLLM_WIZARD_START_CHILD"

#: How much lower the child's CPU priority is than the parent's (``os.nice``): where cores are short,
#: the parent's start (what the person sees) goes first (in tmux on 2 cores: first frame 1.31× → 1.24×
#: a one-Static app, bench/bench_terminal_start.py).
CHILD_NICENESS = 10

_HEADER = struct.Struct("!I")  # each frame: its length, then the pickled dict


def pause_gc() -> None:
    """Stop automatic garbage collection (the start-up allocates many long-lived objects; see the
    module docstring). :func:`resume_gc` undoes it."""
    gc.disable()


def resume_gc() -> None:
    """Start automatic garbage collection again (idempotent). What start-up made and still holds
    (Textual's modules and CSS, the first screen's widgets: ~70,000 tracked objects) is moved to the
    permanent generation first (``gc.freeze``): it lives as long as the app, and every full
    collection would walk it again — measured in tmux, 62 ms per collection with it, the pauses a
    key press would wait behind during a log flood."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def run_wizard(recipes: Path | None = None, model: str | None = None, attach: str | None = None,
               opened: Any = None, **run: Any) -> Any:
    """Run the wizard app until the person quits (the ``wizard`` command's body); returns what the app
    exited with (the "keeps running" lines to print, or None). The collector is paused and the
    start-up child forked (not for ``attach``: the monitor needs neither load first) *before* the app
    module, and so Textual, is imported; both are undone when the app ends. The arguments are
    :func:`~vllm_deploy_wizard.tui.app.make_app`'s; ``run`` goes to Textual's ``App.run``
    (``headless=True``, ``size``, ``auto_pilot``: bench/bench_tui.py starts the wizard this way)."""
    pause_gc()
    start_loads = None if attach else StartLoads.start(recipes)
    try:
        from vllm_deploy_wizard.tui.app import make_app

        app = make_app(recipes=recipes, model=model, attach=attach, opened=opened, start_loads=start_loads)
        return app.run(**run)
    finally:
        resume_gc()
        if start_loads is not None:
            start_loads.close()


def start_frames(services: Any, recipes: Path | None, send: Callable[[dict], None]) -> None:
    """The start-up loads, as the child runs them: detection (in a thread) beside the catalog load;
    ``send`` gets the final frame once both are in, and before it the profile list alone only when
    detection is still running :data:`PARTIAL_SETTLE_S` after the catalog came (so on a CPU node the
    list is painted once, detected profile first, never reordered).

    Catalog frame: ``{"facts": HardwareFacts}`` with the profile list (no detection yet), or
    ``{"errors": {"catalog": text}}`` when the catalog fails to load.
    Final frame (``"final": True``): ``facts`` for the catalog and the detected node, ``inventory``
    (the pickled Inventory, bytes) and ``errors`` (``catalog``; ``detect`` when detection raised,
    ``match`` when matching did). ``services`` is a :class:`~vllm_deploy_wizard.tui.services.Services`
    (the child builds the real one)."""
    from vllm_deploy_wizard.tui.hardware_view import hardware_facts

    errors: dict[str, str] = {}
    detected: list[Any] = []

    def detect() -> None:
        try:
            detected.append(services.detect())
        except Exception as exc:  # noqa: BLE001 — shown to the person by the app, as its own detection would
            errors["detect"] = f"{type(exc).__name__}: {exc}"

    detection = threading.Thread(target=detect, name="start-up detection", daemon=True)
    detection.start()
    catalog = None
    try:
        catalog = services.load_catalog(recipes)
    except Exception as exc:  # noqa: BLE001
        errors["catalog"] = f"{type(exc).__name__}: {exc}"
    detection.join(PARTIAL_SETTLE_S)
    if detection.is_alive():  # a slow detection: the profile list first
        send({"facts": hardware_facts(catalog, None, [])} if catalog is not None else {"errors": dict(errors)})
        detection.join()
    inventory = detected[0] if detected else None
    candidates: list = []
    if catalog is not None and inventory is not None:
        try:
            candidates = list(services.match_profiles(inventory, catalog.taxonomy.hardware_profiles))
        except Exception as exc:  # noqa: BLE001
            errors["match"] = f"{type(exc).__name__}: {exc}"
    final: dict[str, Any] = {"final": True, "facts": hardware_facts(catalog, inventory, candidates)}
    if inventory is not None:
        final["inventory"] = pickle.dumps(inventory, protocol=pickle.HIGHEST_PROTOCOL)
    final["errors"] = errors
    send(final)


class StartLoads:
    """The parent's end of the start-up child: :meth:`ready` reads what it sent, :meth:`frames` (never
    waits) and :meth:`more` (waits for the next) hand over the frames, each once; :meth:`inventory`
    unpickles its Inventory; :meth:`close` stops the child. Build with :meth:`start`."""

    def __init__(self, pid: int, fd: int, started: float) -> None:
        self.pid = pid
        self.started = started  # time.monotonic() at the fork
        self._fd = fd
        self._buffer = b""
        self._frames: list[dict] = []
        self._taken = 0
        self._eof = False
        self.closed = False  # close() was called: the app is ending, nothing is to be loaded instead
        self._lock = threading.Lock()

    @classmethod
    def start(cls, recipes: Path | None,
              services_factory: Callable[[], Any] | None = None) -> StartLoads | None:
        """Fork the child that runs :func:`start_frames` with ``services_factory()`` (default: the
        real services). Returns None where there is no ``os.fork`` or ``VLLM_WIZARD_START_CHILD=0``.
        Call before Textual (or any thread) is started: a fork copies only the calling thread."""
        if not hasattr(os, "fork") or os.environ.get(CHILD_ENV) == "0":
            return None
        read_fd, write_fd = os.pipe()
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_fd)
            _child(write_fd, recipes, services_factory)
        os.close(write_fd)
        return cls(pid, read_fd, started)

    # ------------------------------------------------------------------ reading
    def _read(self, timeout: float | None) -> bool:
        """Read what the pipe holds (waiting up to ``timeout`` s; None = until data or EOF) into
        frames. Returns False once the child closed its end."""
        if self._eof:
            return False
        ready, _, _ = select.select([self._fd], [], [], timeout)
        if not ready:
            return True
        chunk = os.read(self._fd, 1 << 20)
        if not chunk:
            self._ended()
            return False
        self._buffer += chunk
        while len(self._buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buffer)
            if len(self._buffer) < _HEADER.size + size:
                break
            body = self._buffer[_HEADER.size:_HEADER.size + size]
            self._buffer = self._buffer[_HEADER.size + size:]
            self._frames.append(pickle.loads(body))
        return True

    @property
    def done(self) -> bool:
        """True once the final frame arrived or the child ended without it."""
        return self._eof or any(f.get("final") for f in self._frames)

    def ready(self, timeout: float | None = 0.0) -> bool:
        """Read what the child sent, waiting up to ``timeout`` s (None: as long as it takes) for its
        final frame; True once :attr:`done`. Takes no frame."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while not self.done:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    self._read(0.0)  # what is there already
                    break
                if not self._read(left):
                    break
            return self.done

    def frames(self) -> list[dict]:
        """The frames read and not taken yet, after reading what the pipe holds (without waiting)."""
        self.ready(0.0)
        with self._lock:
            new, self._taken = self._frames[self._taken:], len(self._frames)
            return new

    def more(self) -> list[dict]:
        """Block until a frame not taken yet has arrived or the child is done; the frames not taken
        yet (empty once the child is done and every frame was taken — then the child, which exits
        after its final frame, is also waited for and reaped: no zombie for the app's life)."""
        with self._lock:
            while not self.done and self._taken == len(self._frames):
                self._read(None)
            new, self._taken = self._frames[self._taken:], len(self._frames)
            if not new:
                while not self._eof:
                    self._read(None)
            return new

    def final(self) -> dict | None:
        """The final frame once it arrived (None: not yet, or the child ended without sending it)."""
        return next((f for f in self._frames if f.get("final")), None)

    def inventory(self) -> Any | None:
        """The child's Inventory (unpickled here: it imports the detect package), or None when the
        child sent none (yet: call once :attr:`done`)."""
        final = self.final()
        blob = final.get("inventory") if final else None
        return pickle.loads(blob) if blob else None

    # ------------------------------------------------------------------ ending
    def _ended(self) -> None:
        """The child closed its end of the pipe (it does so only by exiting): close ours, reap it."""
        self._eof = True
        os.close(self._fd)
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass

    def close(self) -> None:
        """Stop the child if it still runs (a detection that hangs) and reap it; idempotent. A reader
        waiting in :meth:`more` (the detection worker) sees the end and returns; :attr:`closed` tells
        it not to detect instead."""
        self.closed = True
        if self._eof:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)  # not reaped yet, so the pid is still the child's
        except ProcessLookupError:
            pass
        with self._lock:  # a reader blocked in select wakes on the end of the pipe and reaps it
            if not self._eof:
                self._ended()


def _child(write_fd: int, recipes: Path | None, services_factory: Callable[[], Any] | None) -> None:
    """The forked child's whole life: quiet (stdio on /dev/null: the parent owns the terminal),
    :func:`start_frames` down ``write_fd``, then ``os._exit`` (no atexit handlers, no buffered
    output of the parent flushed twice)."""
    code = 0
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # ctrl+c before Textual's raw mode: the parent's
        os.nice(CHILD_NICENESS)

        def send(frame: dict) -> None:
            body = pickle.dumps(frame, protocol=pickle.HIGHEST_PROTOCOL)
            data = memoryview(_HEADER.pack(len(body)) + body)
            while data:
                data = data[os.write(write_fd, data):]

        if services_factory is None:
            from vllm_deploy_wizard.tui.services import real_services

            services_factory = real_services
        start_frames(services_factory(), recipes, send)
    except BaseException:  # noqa: BLE001 — the parent sees the pipe close without a final frame
        code = 1
    finally:
        os._exit(code)
