"""Accelerator memory still held after a stop, per vendor: NVML, amdsmi, npu-smi.

A restarted vLLM must not race the old process tree for device memory, and ``stop`` reports memory
a stopped run left behind (docs/supervision.md). Each vendor reader returns a :class:`Reading`:
bytes per pid and bytes used per device, or None when the vendor library / tool is absent (no
driver is an expected state, never an error).

Containers: NVML, amdsmi and npu-smi report host pids, which a container's pid namespace does not
show, so a pid match finds nothing. There the run records each device's used bytes at launch
(:func:`baseline`) and memory is "held" when a device's use after stop exceeds that baseline by more
than :data:`BASELINE_SLACK_BYTES`; such memory is reported under pid ``0`` (not attributable).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from vllm_deploy_wizard.common import backends_registry

MIB = 2**20
#: Growth of a device's used memory over the launch baseline still read as noise (allocator caches,
#: another tenant's small context).
BASELINE_SLACK_BYTES = 256 * MIB
NPU_SMI_TIMEOUT_S = 10.0
#: The ROCm compute driver's node: amdsmi is only tried where it exists.
KFD = "/dev/kfd"


@dataclass
class Reading:
    """``per_pid``: bytes per pid (0 when the vendor lists the pid without a count);
    ``per_device``: bytes in use per ``"<vendor>:<index>"``."""

    per_pid: dict[int, int] = field(default_factory=dict)
    per_device: dict[str, int] = field(default_factory=dict)


def read_nvml() -> Reading | None:
    """NVML compute + graphics processes and per-device used memory; None without NVML."""
    from vllm_deploy_wizard.common import nvml

    with nvml.session() as session:
        lib = session.module
        if lib is None:
            return None  # no library/driver is an expected state here
        out = Reading(per_pid=nvml.process_memory(lib, graphics=True))
        try:
            count = int(lib.nvmlDeviceGetCount() or 0)
        except Exception:  # noqa: BLE001 — any NVML failure: no device to read
            count = 0
        for i in range(count):
            try:
                out.per_device[f"nvml:{i}"] = int(lib.nvmlDeviceGetMemoryInfo(lib.nvmlDeviceGetHandleByIndex(i)).used)
            except Exception:  # noqa: BLE001 - one failing query must not hide the others
                pass
        return out


def read_amdsmi() -> Reading | None:
    """amdsmi process list (``pid`` + ``memory_usage.vram_mem``, else ``mem``) and VRAM used per
    GPU; None without amdsmi."""
    if not os.path.exists(KFD) and "amdsmi" not in sys.modules:
        return None  # no AMD GPU driver here: importing amdsmi would only print its library warning
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            import amdsmi

        amdsmi.amdsmi_init()
    except Exception:  # noqa: BLE001 — amdsmi fails in many ways without a usable driver: no reading
        return None
    out = Reading()
    try:
        for i, h in enumerate(amdsmi.amdsmi_get_processor_handles()):
            try:
                for proc in amdsmi.amdsmi_get_gpu_process_list(h):
                    if not isinstance(proc, dict) or "pid" not in proc:
                        continue
                    usage = proc.get("memory_usage") or {}
                    used = usage.get("vram_mem", proc.get("mem", 0))
                    pid = int(proc["pid"])
                    out.per_pid[pid] = out.per_pid.get(pid, 0) + int(used or 0)
            except Exception:  # noqa: BLE001 — one failing query must not hide the others
                pass
            try:
                vram = amdsmi.amdsmi_get_gpu_vram_usage(h)
                out.per_device[f"amdsmi:{i}"] = int(vram["vram_used"]) * MIB
            except Exception:  # noqa: BLE001 — one failing query must not hide the others
                pass
    finally:
        try:
            amdsmi.amdsmi_shut_down()
        except Exception:  # noqa: BLE001 — shutting down is best effort, the reading is made
            pass
    return out


_HBM_PAIR = re.compile(r"(\d+)\s*/\s*(\d+)")
_PROC_ROW = re.compile(r"^\|\s*(\d+)\s+(\d+)\s*\|\s*(\d+)\s*\|\s*(.*?)\s*\|\s*(\d+)\s*\|?\s*$")


def parse_npu_smi(text: str) -> Reading:
    """``npu-smi info`` → :class:`Reading`: the process table (``NPU Chip | Process id | Process
    name | Process memory(MB)``) per pid, and each chip row's HBM used (MB, last ``used / total``)
    per ``"npu:<npu>.<chip>"``."""
    out = Reading()
    in_procs = False
    npu: int | None = None
    for line in text.splitlines():
        if "Process id" in line:
            in_procs = True
            continue
        if in_procs:
            m = _PROC_ROW.match(line.strip())
            if m:
                pid = int(m.group(3))
                out.per_pid[pid] = out.per_pid.get(pid, 0) + int(m.group(5)) * MIB
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        first = cells[0].split() if cells else []
        if len(cells) < 3 or len(first) != 2 or not first[0].isdigit():
            continue
        if not first[1].isdigit():
            npu = int(first[0])
        elif npu is not None:
            pairs = _HBM_PAIR.findall(cells[2])
            if pairs:
                out.per_device[f"npu:{npu}.{first[0]}"] = int(pairs[-1][0]) * MIB
    return out


def read_npu_smi(run: Callable[[list[str]], str | None] | None = None) -> Reading | None:
    """``npu-smi info`` parsed; None when npu-smi is not on PATH or fails. ``run`` returns a
    command's stdout (tests pass a fake)."""
    if run is None:
        if shutil.which("npu-smi") is None:
            return None
        run = _run
    text = run(["npu-smi", "info"])
    return parse_npu_smi(text) if text else None


def _run(argv: list[str]) -> str | None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=NPU_SMI_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _registered_readers() -> tuple[Callable[[], Reading | None], ...]:
    """The reader functions the backend registry names, in its order; ImportError naming any this
    module does not define (docs/backends.md §13)."""
    names = backends_registry.memory_readers()
    missing = [name for name in names if not callable(globals().get(name))]
    if missing:
        raise ImportError(f"the backend registry names memory reader(s) {', '.join(missing)}, which "
                          "launcher/devmem.py does not define (docs/backends.md §13)")
    return tuple(globals()[name] for name in names)


#: Every vendor reader, in the order the backend registry names them (docs/backends.md §13).
READERS: tuple[Callable[[], Reading | None], ...] = _registered_readers()


def read_all(readers: tuple[Callable[[], Reading | None], ...] | None = None) -> Reading | None:
    """Every vendor's reading merged; None when no vendor answered."""
    merged: Reading | None = None
    for reader in readers or READERS:
        r = reader()
        if r is None:
            continue
        merged = merged or Reading()
        for pid, b in r.per_pid.items():
            merged.per_pid[pid] = merged.per_pid.get(pid, 0) + b
        merged.per_device.update(r.per_device)
    return merged


def in_container(root: str = "/") -> bool:
    """Docker / Podman markers (``/.dockerenv``, ``/run/.containerenv``)."""
    return any(os.path.exists(os.path.join(root, p)) for p in (".dockerenv", "run/.containerenv"))


def baseline(readers: tuple[Callable[[], Reading | None], ...] | None = None) -> dict[str, int] | None:
    """Per-device used bytes now (recorded at launch in a container); None when no vendor answered."""
    r = read_all(readers)
    return dict(r.per_device) if r is not None else None


def memory_held(pids: set[int], base: dict[str, int] | None = None,
                readers: tuple[Callable[[], Reading | None], ...] | None = None) -> dict[int, int] | None:
    """Bytes still held, per pid of ``pids``; None when no vendor answered.

    With ``base`` (a launch :func:`baseline`), memory above it on any device by more than
    :data:`BASELINE_SLACK_BYTES` that no pid of ``pids`` accounts for is reported under pid 0.
    """
    r = read_all(readers)
    if r is None:
        return None
    held = {pid: b for pid, b in r.per_pid.items() if pid in pids}
    if base is not None:
        grown = sum(max(0, used - base.get(dev, 0)) for dev, used in r.per_device.items()
                    if used - base.get(dev, 0) > BASELINE_SLACK_BYTES)
        grown -= sum(held.values())
        if grown > BASELINE_SLACK_BYTES:
            held[0] = grown
    return held
