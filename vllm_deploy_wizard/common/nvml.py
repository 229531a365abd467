"""NVML sessions: the one place that initialises and shuts down NVIDIA's management library.

NVML (``nvidia-ml-py``, import name ``pynvml``) is optional everywhere: without the binding, the
driver or a GPU, ``nvmlInit`` raises (``NVMLError_LibraryNotFound``, ``DriverNotLoaded``…) and the
caller carries on without GPU facts. Two ways to use it:

* :func:`session` — init, use, shut down (detection and the launcher's "who still holds GPU
  memory" check: NVML is never held open across a TUI session);
* :func:`shared` — initialised once per process and kept (the monitor samples every 2 s; a CPU-only
  node then pays one failed init and nothing more).

``load`` lets callers pass their own import seam (detection's ``Facts.module``, fakes in tests).
Nothing here raises from init or shutdown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


def _import_pynvml() -> Any:
    import pynvml

    return pynvml


@dataclass
class Session:
    """An NVML session: ``module`` is the initialised binding, or None with ``error`` the class
    name of what failed (``"ImportError"``, ``"NVMLError_LibraryNotFound"``…)."""

    module: Any = None
    error: str | None = None


@contextmanager
def session(load: Callable[[], Any] = _import_pynvml) -> Iterator[Session]:
    """Initialise NVML for the ``with`` block and shut it down after (errors swallowed)."""
    try:
        nvml = load()
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - every NVML error class, ImportError, ctypes OSError
        yield Session(None, type(exc).__name__)
        return
    try:
        yield Session(nvml)
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - nothing useful to do about a failing shutdown
            pass


_shared: dict[str, Any] = {}


def shared(load: Callable[[], Any] = _import_pynvml) -> Any:
    """The binding initialised once for this process, or None when NVML is not available here
    (remembered: later calls do not retry)."""
    if "module" not in _shared:
        try:
            nvml = load()
            nvml.nvmlInit()
            _shared["module"] = nvml
        except Exception:  # noqa: BLE001 - no driver / library: CPU-only
            _shared["module"] = None
    return _shared["module"]


def process_memory(nvml: Any, pids: set[int] | None = None, graphics: bool = False) -> dict[int, int]:
    """GPU memory in bytes per pid, summed over every GPU's compute processes (and graphics
    processes with ``graphics=True``), limited to ``pids`` when given. A call that fails on one GPU
    skips it; ``usedGpuMemory`` None (some containers) counts as 0."""
    kinds = ["nvmlDeviceGetComputeRunningProcesses"] + (["nvmlDeviceGetGraphicsRunningProcesses"] if graphics else [])
    usage: dict[int, int] = {}
    try:
        count = int(nvml.nvmlDeviceGetCount() or 0)
    except Exception:  # noqa: BLE001 — any NVML failure: no device, no usage
        return usage
    for index in range(count):
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
        except Exception:  # noqa: BLE001 - GpuIsLost on one handle
            continue
        for kind in kinds:
            try:
                procs = getattr(nvml, kind)(handle) or []
            except Exception:  # noqa: BLE001 - NotSupported on this GPU
                continue
            for proc in procs:
                pid = int(proc.pid)
                if pids is None or pid in pids:
                    usage[pid] = usage.get(pid, 0) + int(getattr(proc, "usedGpuMemory", 0) or 0)
    return usage
