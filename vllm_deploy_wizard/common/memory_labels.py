"""How memory figures are worded, the same on every screen (docs/fit.md §10).

``vllm-wizard detect``, the wizard's hardware screen and the plan notes use these words:

* **total** — a device's memory as its driver reports it (NVML ``memory.total``, amdsmi VRAM,
  npu-smi HBM) or the host's RAM (NUMA nodes with CPUs, else ``MemTotal``). A device's total ×
  ``--gpu-memory-utilization`` is what vLLM budgets, so the **total decides the KV cache** (the
  fit, docs/fit.md §4).
* **available** — the host's ``MemAvailable`` now (what new processes can get without swapping).
* **usable for offload** — min(RAM total, container limit) (docs/detection.md §5.1). The usable RAM's
  share, never above what is available, **decides the offload sizes** (docs/fit.md §9).

Every figure is GiB (2³⁰ bytes), one decimal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

GIB = 2**30
#: One line saying which figure decides what (shown under the figures).
WHICH_DECIDES = ("device total × --gpu-memory-utilization decides the KV cache; a share of the usable RAM (min of "
                 "RAM and container limit), capped at what is available now, decides offload sizes")


def gib(value: float | int | None) -> str:
    """``24.0 GiB`` for a byte count; ``?`` when unknown."""
    return f"{value / GIB:.1f} GiB" if value else "?"


def node_memory(gb: float) -> str:
    """``1051 GiB/node`` for a node's memory given in GB (10⁹ bytes: the catalog's ``vram_gb``, the
    recipes' unit) — the hardware list's one unit for the catalog's nominal and the detected figures."""
    return f"{gb * 1e9 / GIB:.0f} GiB/node"


def device_total(value: int | None) -> str:
    """``24.0 GiB total`` (a device's memory)."""
    return f"{gib(value)} total"


def host_memory(ram: int | None, available: int | None, limit: int | None = None) -> str:
    """``RAM 125.0 GiB total, 114.4 GiB available, 125.0 GiB usable for offload`` (+ the container
    limit when there is one)."""
    usable = min(b for b in (ram, limit) if b) if (ram or limit) else None
    text = f"RAM {gib(ram)} total, {gib(available)} available"
    if limit:
        text += f", container limit {gib(limit)}"
    return text + f", {gib(usable)} usable for offload"


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def devices_differ(devices: Iterable[Any]) -> bool:
    """True when the devices (detect ``Device`` objects or ``{"name", "memory_bytes"}`` dicts) are
    not all alike: another name or another total memory."""
    kinds = {(_get(d, "name"), _get(d, "memory_bytes")) for d in devices}
    return len(kinds) > 1


def device_list(devices: Iterable[Any]) -> list[str]:
    """One ``0: NVIDIA GeForce RTX 4090, 24.0 GiB total`` line per device (index as detect lists it)."""
    return [f"{_get(d, 'index')}: {_get(d, 'name') or '?'}, {device_total(_get(d, 'memory_bytes'))}" for d in devices]
