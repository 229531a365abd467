"""Host and accelerator load for the monitor's side panel: per-GPU memory and utilisation where NVML
answers, CPU and RAM otherwise.

Sampled by the monitor in a thread worker every :data:`PERIOD_S` seconds (NVML calls block briefly;
never on the UI thread). NVML is initialised once per process and its absence is remembered, so a
CPU-only node pays one failed ``nvmlInit`` and then only psutil. Never raises: a failing probe
drops that part of the sample.
"""

from __future__ import annotations

from typing import Any

#: Seconds between samples.
PERIOD_S = 2.0


def _nvml():
    """The initialised ``pynvml`` module, or None when NVML is not available here."""
    from vllm_deploy_wizard.common import nvml

    return nvml.shared()


def gpu_stats() -> list[dict[str, Any]]:
    """``[{index, name, util_percent, mem_used_gib, mem_total_gib}]`` per NVIDIA GPU; [] without NVML."""
    nvml = _nvml()
    if nvml is None:
        return []
    out = []
    try:
        for i in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            mem = nvml.nvmlDeviceGetMemoryInfo(h)
            util = nvml.nvmlDeviceGetUtilizationRates(h)
            name = nvml.nvmlDeviceGetName(h)
            out.append({
                "index": i,
                "name": name.decode() if isinstance(name, bytes) else str(name),
                "util_percent": int(util.gpu),
                "mem_used_gib": round(mem.used / 2**30, 1),
                "mem_total_gib": round(mem.total / 2**30, 1),
            })
    except Exception:  # noqa: BLE001 — a GPU fell off the bus mid-sample: report what we have
        pass
    return out


def sample() -> dict[str, Any]:
    """One sample: ``{"type": "stats", "cpu_percent", "ram_percent", "ram_used_gib", "ram_total_gib",
    "gpus": [...]}`` (the monitor model's ``stats`` event)."""
    import psutil

    vm = psutil.virtual_memory()
    return {
        "type": "stats",
        "cpu_percent": psutil.cpu_percent(interval=None),
        "ram_percent": vm.percent,
        "ram_used_gib": round((vm.total - vm.available) / 2**30, 1),
        "ram_total_gib": round(vm.total / 2**30, 1),
        "gpus": gpu_stats(),
    }
