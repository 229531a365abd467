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


def stats_text(stats: dict[str, Any]) -> str:
    """The side panel's lines for a sample (:func:`sample`'s shape: ``gpus`` with ``index``,
    ``util_percent``, ``mem_used_gib``, ``mem_total_gib``; ``cpu_percent``, ``ram_used_gib``,
    ``ram_total_gib``): one line per GPU, then CPU and RAM; "" for no sample."""
    if not stats:
        return ""
    lines = []
    for gpu in stats.get("gpus") or []:
        g = gpu if isinstance(gpu, dict) else vars(gpu)
        lines.append(f"GPU{g.get('index', '')} {g.get('util_percent', '?')}% · "
                     f"{g.get('mem_used_gib', '?')}/{g.get('mem_total_gib', '?')} GiB")
    if "cpu_percent" in stats:
        lines.append(f"CPU {stats['cpu_percent']:.0f}% · "
                     f"RAM {stats.get('ram_used_gib', '?')}/{stats.get('ram_total_gib', '?')} GiB")
    return "\n".join(lines)
