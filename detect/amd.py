"""AMD Instinct GPUs through ``amdsmi`` with a sysfs fallback, docs/detection.md §3.2.

Decisions:

* ``import amdsmi`` is caught broadly: on a host without ROCm the wheel raises
  ``KeyError('libamd_smi.so')`` at import, not ImportError (measured, docs/architecture.md §4, docs/detection.md §3.2).
* Physical cards are counted from PCI functions (class 0x12, not VFs), never from amdsmi handles:
  in CPX/NPS4 mode an 8-card box exposes 64 handles (§3.2 "Partitions").
* A GPU is usable only when ``/dev/kfd`` exists and is read/writable by this user; otherwise the
  group is ``pci_only`` with the reason (container without ``--device``, missing groups).
* Without a working amdsmi but with an accessible ``/dev/kfd``, memory and gfx target come from
  ``mem_info_vram_total`` and the KFD topology (``gfx_target_version`` 90402 → gfx942).
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

from vllm_deploy_wizard.detect.context import ProbeContext
from vllm_deploy_wizard.detect.inventory import AcceleratorGroup, Device, ProbeResult, Status
from vllm_deploy_wizard.detect.pci import AMD

#: PCI device id → catalog family (vLLM's ``_ROCM_DEVICE_ID_NAME_MAP`` plus MI350X/MI355X).
DEVICE_FAMILY = {
    "0x74a1": "mi300x", "0x74b5": "mi300x", "0x74a9": "mi300x", "0x74bd": "mi300x",
    "0x74a5": "mi325x", "0x74b9": "mi325x", "0x75a0": "mi350x", "0x75a3": "mi355x",
    "0x74a2": "mi308x", "0x74a0": "mi300a",
}


def gfx_from_kfd(value: int) -> str:
    """KFD ``gfx_target_version`` (major·10000 + minor·100 + stepping, decimal) → ``gfx942``.

    Rule inferred in docs/detection.md §3.2 (90402 → gfx942, 90500 → gfx950); the minor and stepping
    digits are printed in hex as in LLVM target names (gfx90a).
    """
    major, minor, step = value // 10000, (value // 100) % 100, value % 100
    return f"gfx{major}{minor:x}{step:x}"


def _call(lib: Any, fn: str, *args: Any) -> Any:
    try:
        return getattr(lib, fn)(*args)
    except Exception:  # noqa: BLE001 - one field failing must not lose the GPU
        return None


def _amdsmi_devices(lib: Any) -> tuple[list[Device], str | None, Any]:
    """(devices per handle, init error name, link info of the first pair)."""
    try:
        lib.amdsmi_init()
    except Exception as exc:  # noqa: BLE001 - AmdSmiLibraryException and friends
        return [], type(exc).__name__, None
    try:
        handles = list(_call(lib, "amdsmi_get_processor_handles") or [])
        devices = []
        for index, handle in enumerate(handles):
            asic = _call(lib, "amdsmi_get_gpu_asic_info", handle) or {}
            vram = _call(lib, "amdsmi_get_gpu_vram_info", handle) or {}
            size_mb = vram.get("vram_size")
            details: dict[str, Any] = {
                "compute_partition": _call(lib, "amdsmi_get_gpu_compute_partition", handle),
                "memory_partition": _call(lib, "amdsmi_get_gpu_memory_partition", handle),
            }
            power = _call(lib, "amdsmi_get_power_cap_info", handle) or {}
            if power.get("power_cap"):
                details["power_cap_w"] = int(power["power_cap"]) / 1e6
            xgmi = _call(lib, "amdsmi_get_xgmi_info", handle) or {}
            if xgmi:
                details["xgmi_lanes"] = xgmi.get("xgmi_lanes")
            if asic.get("asic_serial"):
                details["serial"] = asic["asic_serial"]
            device_id = str(asic.get("device_id") or "").lower() or None
            devices.append(Device(
                brand="AMD", kind="gpu", index=index, name=asic.get("market_name"),
                pci_device_id=device_id,
                bdf=str(_call(lib, "amdsmi_get_gpu_device_bdf", handle) or "").lower() or None,
                compute_arch=asic.get("target_graphics_version"),
                memory_bytes=int(size_mb) << 20 if size_mb else None,
                memory_source="amdsmi" if size_mb else None, source="amdsmi", details=details,
            ))
        link = _call(lib, "amdsmi_topo_get_link_type", handles[0], handles[1]) if len(handles) > 1 else None
        return devices, None, link
    finally:
        _call(lib, "amdsmi_shut_down")


def probe(ctx: ProbeContext) -> tuple[ProbeResult, AcceleratorGroup | None]:
    """Detect AMD Instinct GPUs. Never raises."""
    on_pci = [fn for fn in ctx.by_vendor.get(AMD, []) if fn.klass.startswith("0x12") or fn.name]
    if not on_pci and ctx.pci is not None:
        # PCI gate (§0.1): no AMD accelerator on the bus, so amdsmi (whose import prints to stdout
        # and costs time when ROCm is missing) is not loaded at all.
        return ProbeResult("absent", "no AMD Instinct GPU on the PCI bus"), None
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            lib = ctx.facts.module("amdsmi")
        problem = None
    except ImportError:
        lib, problem = None, "amdsmi Python package not installed"
    except Exception as exc:  # noqa: BLE001 - KeyError('libamd_smi.so') without ROCm
        lib, problem = None, f"amdsmi is installed but its library could not be loaded ({type(exc).__name__}: {exc})"
    if not on_pci and lib is None:
        return ProbeResult("absent", f"PCI bus not visible and {problem}"), None

    kfd_present = ctx.has_dev("/dev/kfd")
    kfd_ok = kfd_present and ctx.facts.access("/dev/kfd")
    devices: list[Device] = []
    init_error = link = None
    if lib is not None and kfd_ok:
        devices, init_error, link = _amdsmi_devices(lib)
    if not on_pci and not devices:
        return ProbeResult("absent", "PCI bus not visible and amdsmi reports no GPU"), None
    cards = len(on_pci) or len({d.bdf for d in devices}) or len(devices)
    notes: list[str] = []
    group = AcceleratorGroup(brand="AMD", kind="gpu", probe="amd", devices=devices, count=cards, notes=notes)
    pci_family = next((DEVICE_FAMILY[fn.device] for fn in on_pci if fn.device in DEVICE_FAMILY), None)

    def pci_devices(memory: list[int] | None = None, arch: str | None = None) -> list[Device]:
        return [Device(brand="AMD", kind="gpu", index=i, name=fn.name, pci_device_id=fn.device, bdf=fn.bdf,
                       numa_node=fn.numa_node, compute_arch=arch, source="sysfs" if memory else "pci",
                       memory_bytes=memory[i] if memory and i < len(memory) else (memory[0] if memory else None),
                       memory_source="sysfs" if memory else None)
                for i, fn in enumerate(on_pci)]

    sysfs_fallback = kfd_ok and not devices and (lib is None or init_error is not None)
    if not kfd_ok or (not devices and not sysfs_fallback):
        # Present on PCI, but no usable device node or library: pci_only.
        if not kfd_present and ctx.in_container:
            why = "AMD GPUs exist on the host but /dev/kfd and /dev/dri are not passed into this container"
        elif not kfd_present:
            why = "AMD GPUs present on the PCI bus but /dev/kfd is missing (amdgpu driver not loaded?)"
        elif not kfd_ok:
            why = "AMD GPUs present but /dev/kfd is not accessible - add the user to the render and video groups"
        else:
            why = "AMD GPUs present on the PCI bus but amdsmi reports no GPU"
        group.devices, group.pci_only, group.access_reason = pci_devices(), True, why
        group.family_hint = pci_family
        notes.append(why)
        return ProbeResult("unavailable", why), group

    status: Status = "ok"
    reason = f"amdsmi: {len(devices)} GPU handle(s) on {cards} card(s)"
    if not devices:  # amdsmi missing, /dev/kfd usable: identify from PCI id and sysfs
        sysfs = ctx.facts.amd_sysfs()
        gfx = sysfs.get("gfx_target_versions") or []
        group.devices = pci_devices(sysfs.get("vram_total_bytes") or None,
                                    gfx_from_kfd(gfx[0]) if gfx else None)
        status = "degraded"
        reason = f"{problem or f'amdsmi failed to initialise ({init_error})'} - identified from PCI id and sysfs"
        notes.append(reason)
    elif len(devices) > cards:
        first = devices[0].details
        modes = "/".join(m for m in (first.get("compute_partition"), first.get("memory_partition")) if m)
        family = pci_family or (devices[0].name or "").split()[-1].lower()
        group.flags["partitioned"] = modes or True
        group.flags["partition_handles"] = len(devices)
        notes.append(f"GPUs are partitioned ({modes}): vLLM will see {len(devices)} small GPUs; "
                     f"switch to SPX/NPS1 to use the {family} profile as intended")
        # Per-partition memory is unreliable (ROCm #4750): keep one device per physical card.
        seen: dict[str, Device] = {}
        for dev in devices:  # a partition may sit on another function of its card's bus (dddd:bb:dd.1)
            seen.setdefault((dev.bdf or "").rsplit(".", 1)[0] or str(dev.index), dev)
        group.devices = list(seen.values())[:cards] if len(seen) >= cards else devices[:cards]
    if isinstance(link, dict) and link.get("type") == 2 and link.get("hops") == 1:
        group.interconnect = "xgmi"
    group.family_hint = pci_family or next(
        (DEVICE_FAMILY.get(d.pci_device_id or "") for d in group.devices if d.pci_device_id in DEVICE_FAMILY), None)
    hip, cuda = ctx.facts.env().get("HIP_VISIBLE_DEVICES"), ctx.facts.env().get("CUDA_VISIBLE_DEVICES")
    if hip is not None and cuda is not None and hip != cuda:
        notes.append("HIP_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES disagree - vLLM on ROCm refuses to start")
    return ProbeResult(status, reason), group
