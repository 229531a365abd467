"""Intel data-centre/workstation GPUs (Arc Pro B60/B70, vLLM's XPU backend), docs/detection.md §3.3.

There is no NVML-like library in common use, so the PCI layer is the primary source: device id
(e211 B60, e223 B70, e212 B50), bound driver (``xe``, older ``i915``) and a render node under
``/dev/dri``. VRAM comes from xe's ``tile*/physical_vram_size_bytes`` (hex). ``xpu-smi discovery -j``
is read when it is on PATH, for names only: older stacks call a B60 "Intel(R) Graphics [0xe211]",
so identity stays the PCI id. The optional ``torch.xpu`` check is not run (it would import torch).
"""

from __future__ import annotations

import json
from typing import Any

from vllm_deploy_wizard.detect.context import ProbeContext
from vllm_deploy_wizard.detect.inventory import AcceleratorGroup, Device, ProbeResult
from vllm_deploy_wizard.detect.pci import INTEL

XE_DRIVERS = ("xe", "i915")


def _xpu_smi_names(ctx: ProbeContext) -> dict[str, str]:
    """BDF → device name from ``xpu-smi discovery -j`` ({} when unavailable or unparsable)."""
    if not ctx.facts.which("xpu-smi"):
        return {}
    result = ctx.facts.run(["xpu-smi", "discovery", "-j"])
    if result is None or not result.ok:
        return {}
    try:
        data = json.loads(result.stdout)
    except ValueError:
        return {}
    out = {}
    for item in data.get("device_list", []) if isinstance(data, dict) else []:
        bdf = str(item.get("pci_bdf_address", "")).lower()
        if bdf and item.get("device_name"):
            out[bdf] = str(item["device_name"])
    return out


def probe(ctx: ProbeContext) -> tuple[ProbeResult, AcceleratorGroup | None]:
    """Detect Intel XPUs from PCI, xe sysfs and (optionally) xpu-smi. Never raises."""
    on_pci = ctx.by_vendor.get(INTEL, [])
    if not on_pci:
        return ProbeResult("absent", "no Intel Arc Pro / data-centre GPU on the PCI bus"), None
    smi_names = _xpu_smi_names(ctx)
    devices = []
    for i, fn in enumerate(on_pci):
        vram = ctx.facts.xe_vram_bytes(fn.bdf) if fn.driver in XE_DRIVERS else None
        details: dict[str, Any] = {"driver": fn.driver}
        tiles = ctx.facts.xe_tiles(fn.bdf) if fn.driver in XE_DRIVERS else None
        if tiles:
            details["tiles"] = tiles
        if fn.bdf in smi_names:
            details["xpu_smi_name"] = smi_names[fn.bdf]
        devices.append(Device(brand="Intel", kind="xpu", index=i, name=fn.name, pci_device_id=fn.device,
                              bdf=fn.bdf, numa_node=fn.numa_node, memory_bytes=vram,
                              memory_source="sysfs" if vram else None, source="pci", details=details))
    group = AcceleratorGroup(brand="Intel", kind="xpu", probe="intel_xpu", devices=devices, count=len(devices))
    render = [p for p in ctx.dev_nodes if p.startswith("/dev/dri/renderD")]
    why = None
    if all(fn.driver not in XE_DRIVERS for fn in on_pci):
        why = "Intel GPUs found but no driver is bound (the kernel's xe driver may be too old for this GPU)"
    elif not render:
        why = ("Intel GPUs exist on the host but /dev/dri is not passed into this container" if ctx.in_container
               else "Intel GPUs present on the PCI bus but no /dev/dri render node exists")
    elif not any(ctx.facts.access(p) for p in render):
        why = "Intel GPUs present but /dev/dri/renderD* is not accessible - add the user to the render group"
    if why:
        group.pci_only, group.access_reason = True, why
        group.notes.append(why)
        return ProbeResult("unavailable", why), group
    reason = f"PCI/xe: {len(devices)} GPU(s)" + (" (xpu-smi names read)" if smi_names else "")
    return ProbeResult("ok", reason), group
