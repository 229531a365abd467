"""NVIDIA GPUs through NVML (``nvidia-ml-py``, import name ``pynvml``), docs/detection.md §3.1.

Order of sources, each used only when the previous one fails: NVML → ``nvidia-smi`` CSV (5 s
timeout) → the PCI id table (``pci_only``). NVML is opened and shut down inside the probe, never
held. Every NVML call that reads one field is wrapped on its own: a binding or driver that lacks a
call (``FunctionNotFound``/``NotSupported``) leaves that field empty instead of losing the GPU.

NVML errors are classified by class name (``NVMLError_DriverNotLoaded`` …) because pynvml creates
those classes at import time; a fake module with the same class names drives the same code.
"""

from __future__ import annotations

import ctypes
from typing import Any

from vllm_deploy_wizard.common.nvml import process_memory
from vllm_deploy_wizard.common.nvml import session as nvml_session
from vllm_deploy_wizard.detect.context import ProbeContext
from vllm_deploy_wizard.detect.inventory import AcceleratorGroup, Device, ProbeResult, Status
from vllm_deploy_wizard.detect.pci import NVIDIA

NVIDIA_SMI_QUERY = [
    "nvidia-smi",
    "--query-gpu=index,name,memory.total,compute_cap,pci.bus_id,driver_version",
    "--format=csv,noheader,nounits",
]

#: NVML init failure (class name) → (reason shown when GPUs are on the PCI bus). §3.1 table.
INIT_ERRORS = {
    "NVMLError_DriverNotLoaded": "NVIDIA kernel driver is not loaded",
    "NVMLError_LibRmVersionMismatch": "NVIDIA driver/library version mismatch - reboot or reload the nvidia modules",
    "NVMLError_NoPermission": "no permission to open the NVIDIA device nodes (/dev/nvidia*)",
    "NVMLError_Unknown": "NVML failed with an unknown error (typical in a container after a systemd/cgroup reload)"
                         " - restart the container",
    "NVMLError_LibraryNotFound": "libnvidia-ml.so.1 (the NVIDIA driver's user-space library) was not found",
}
_NVLINK_MAX = 18
_FABRIC_STATE_COMPLETED = 3


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _call(nvml: Any, fn: str, *args: Any, failed: list[str] | None = None, **kwargs: Any) -> Any:
    """Call ``nvml.<fn>(*args)``; on any error record ``fn`` in ``failed`` and return None."""
    try:
        return getattr(nvml, fn)(*args, **kwargs)
    except Exception:  # noqa: BLE001 - one failing field must not lose the device
        if failed is not None:
            failed.append(fn)
        return None


def _memory_total(nvml: Any, handle: Any, failed: list[str]) -> int | None:
    info = None
    if hasattr(nvml, "nvmlMemory_v2"):
        info = _call(nvml, "nvmlDeviceGetMemoryInfo", handle, version=nvml.nvmlMemory_v2)
    if info is None:
        info = _call(nvml, "nvmlDeviceGetMemoryInfo", handle, failed=failed)
    total = getattr(info, "total", None)
    return int(total) if total else None


def _nvlink_active(nvml: Any, handle: Any) -> int:
    active = 0
    for link in range(_NVLINK_MAX):
        try:
            state = nvml.nvmlDeviceGetNvLinkState(handle, link)
        except Exception:  # noqa: BLE001 - NotSupported on PCIe cards, or past the last link
            break
        active += 1 if state else 0
    return active


def _fabric(nvml: Any, handle: Any) -> dict[str, Any] | None:
    struct_cls = getattr(nvml, "c_nvmlGpuFabricInfo_t", None)
    if struct_cls is None:
        return None
    info = struct_cls()
    ref = ctypes.byref(info) if isinstance(info, ctypes.Structure) else info
    try:
        nvml.nvmlDeviceGetGpuFabricInfo(handle, ref)
    except Exception:  # noqa: BLE001 - NotSupported on single-GPU/PCIe boards
        return None
    uuid = bytes(info.clusterUuid) if not isinstance(info.clusterUuid, str) else info.clusterUuid
    cluster = uuid.hex() if isinstance(uuid, bytes) else uuid.replace("-", "")
    return {"state": int(info.state), "clique_id": int(info.cliqueId), "cluster_zero": set(cluster) <= {"0"}}


def _read_device(nvml: Any, index: int, handle: Any, mem_total_host: int | None) -> Device:
    failed: list[str] = []
    name = _call(nvml, "nvmlDeviceGetName", handle, failed=failed)
    pci = _call(nvml, "nvmlDeviceGetPciInfo", handle, failed=failed)
    cc = _call(nvml, "nvmlDeviceGetCudaComputeCapability", handle, failed=failed)
    memory = _memory_total(nvml, handle, failed)
    details: dict[str, Any] = {}
    uuid = _call(nvml, "nvmlDeviceGetUUID", handle, failed=failed)
    if uuid:
        details["uuid"] = _text(uuid)
    mig = _call(nvml, "nvmlDeviceGetMigMode", handle)  # NotSupported on GeForce: not a failure
    details["mig"] = bool(mig and mig[0])
    if details["mig"]:
        count = _call(nvml, "nvmlDeviceGetMaxMigDeviceCount", handle) or 0
        instances = 0
        sizes: list[int] = []
        for i in range(int(count)):
            mig_handle = _call(nvml, "nvmlDeviceGetMigDeviceHandleByIndex", handle, i)
            if mig_handle is not None:
                instances += 1
                info = _call(nvml, "nvmlDeviceGetMemoryInfo", mig_handle)
                if info is not None and getattr(info, "total", None):
                    sizes.append(int(info.total))
        details["mig_instances"] = instances
        if sizes:
            details["mig_memory_bytes"] = sizes
    details["nvlink_active"] = _nvlink_active(nvml, handle)
    fabric = _fabric(nvml, handle)
    if fabric:
        details["fabric"] = fabric
    c2c = _call(nvml, "nvmlDeviceGetC2cModeInfoV", handle)
    if c2c is not None:
        details["c2c_enabled"] = bool(getattr(c2c, "isC2cEnabled", False))
    memory_source = "nvml" if memory else None
    if memory is None and mem_total_host:
        memory, memory_source = mem_total_host, "host_meminfo"  # GB10 unified memory (§3.1)
    if failed:
        details["unreadable"] = failed
    bus_id = _text(getattr(pci, "busId", "") or "").lower() if pci is not None else ""
    if bus_id.count(":") == 2 and len(bus_id.split(":")[0]) == 8:
        bus_id = bus_id[4:]  # NVML's 8-digit domain → sysfs' 4-digit form
    pci_id = getattr(pci, "pciDeviceId", None) if pci is not None else None
    device_id = f"0x{(int(pci_id) >> 16) & 0xFFFF:04x}" if isinstance(pci_id, int) else None
    return Device(
        brand="NVIDIA", kind="gpu", index=index, name=_text(name) if name else None,
        pci_device_id=device_id, bdf=bus_id or None,
        compute_arch=f"sm{cc[0]}{cc[1]}" if cc else None,
        memory_bytes=memory, memory_source=memory_source, source="nvml", details=details,
    )


def _nvml_devices(nvml: Any, ctx: ProbeContext, notes: list[str]) -> tuple[list[Device], str | None, str | None]:
    """Open NVML, read every GPU, shut down. Returns (devices, init error class name, driver)."""
    with nvml_session(lambda: nvml) as session:
        if session.module is None:
            return [], session.error, None
        driver = _call(nvml, "nvmlSystemGetDriverVersion")
        count = _call(nvml, "nvmlDeviceGetCount") or 0
        devices = []
        for index in range(int(count)):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
            except Exception as exc:  # noqa: BLE001 - GpuIsLost on one handle
                notes.append(f"GPU {index} could not be opened ({type(exc).__name__}); it is left out")
                continue
            devices.append(_read_device(nvml, index, handle, ctx.mem_total_bytes))
        return devices, None, _text(driver) if driver else None


def _smi_devices(ctx: ProbeContext) -> list[Device] | None:
    """GPUs from ``nvidia-smi`` CSV, or None when nvidia-smi is missing or fails."""
    if not ctx.facts.which("nvidia-smi"):
        return None
    result = ctx.facts.run(NVIDIA_SMI_QUERY)
    if result is None or not result.ok:
        return None
    devices = []
    for line in result.stdout.splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) < 5 or not cols[0].isdigit():
            continue
        try:
            memory = int(float(cols[2])) << 20
        except ValueError:
            memory = None
        arch = "sm" + cols[3].replace(".", "") if cols[3].replace(".", "").isdigit() else None
        bdf = cols[4].lower()
        if bdf.count(":") == 2 and len(bdf.split(":")[0]) == 8:
            bdf = bdf[4:]
        devices.append(Device(brand="NVIDIA", kind="gpu", index=int(cols[0]), name=cols[1], bdf=bdf,
                              compute_arch=arch, memory_bytes=memory,
                              memory_source="nvidia-smi" if memory else None, source="nvidia-smi",
                              details={"driver": cols[5]} if len(cols) > 5 else {}))
    return devices or None


def probe(ctx: ProbeContext) -> tuple[ProbeResult, AcceleratorGroup | None]:
    """Detect NVIDIA GPUs. Never raises; status per docs/detection.md §3.1 failure table."""
    on_pci = ctx.by_vendor.get(NVIDIA, [])
    notes: list[str] = []
    binding_problem: str | None = None
    devices: list[Device] = []
    init_error: str | None = None
    driver = None
    try:
        nvml = ctx.facts.module("pynvml")
    except ImportError:
        nvml, binding_problem = None, "NVML Python binding (nvidia-ml-py) not installed"
    except Exception as exc:  # noqa: BLE001 - a broken binding is reported, not raised
        nvml, binding_problem = None, f"NVML Python binding failed to import ({type(exc).__name__})"
    if nvml is not None:
        devices, init_error, driver = _nvml_devices(nvml, ctx, notes)
    status: Status = "ok"
    reason = f"NVML: {len(devices)} GPU(s)" + (f", driver {driver}" if driver else "")
    if not devices and binding_problem and (on_pci or ctx.pci is None):
        smi = _smi_devices(ctx)
        if smi:
            devices = smi
            status, reason = "degraded", f"{binding_problem} - used nvidia-smi instead"
            notes.append(reason)
    if not devices and not on_pci:
        if ctx.facts.read_text("/etc/nv_tegra_release") is not None:
            return ProbeResult("unavailable",
                               "Jetson/Thor (/etc/nv_tegra_release): no NVML and no catalog profile"), None
        why = binding_problem or INIT_ERRORS.get(init_error or "", init_error or "no NVIDIA GPU reported by NVML")
        return ProbeResult("absent", f"no NVIDIA GPU on the PCI bus ({why})"), None

    group = AcceleratorGroup(brand="NVIDIA", kind="gpu", probe="nvidia", devices=devices,
                             count=len(devices), notes=notes)
    if not devices:  # on the PCI bus, but no library/device node works: pci_only
        group.pci_only = True
        group.devices = [Device(brand="NVIDIA", kind="gpu", index=i, name=fn.name, pci_device_id=fn.device,
                                bdf=fn.bdf, numa_node=fn.numa_node, source="pci",
                                details={"nominal_gib": fn.nominal_gib})
                         for i, fn in enumerate(on_pci)]
        group.count = len(on_pci)
        if ctx.in_container and not ctx.has_dev("/dev/nvidia"):
            why = (f"{group.count} NVIDIA {group.units()} exist on the host but are not passed into this "
                   "container (run with --gpus all / NVIDIA container toolkit)")
        elif init_error:
            why = INIT_ERRORS.get(init_error, f"NVML initialisation failed ({init_error})")
        elif all(fn.driver is None for fn in on_pci):
            why = INIT_ERRORS["NVMLError_DriverNotLoaded"]
        else:
            why = f"{binding_problem} and nvidia-smi is not available"
        group.access_reason = f"NVIDIA GPUs present on the PCI bus but {why}" if not why[0].isdigit() else why
        notes.append(why)
        return ProbeResult("unavailable", why), group

    # Flags and derived facts.
    if ctx.pci is None:
        notes.append("WSL: PCI bus not visible, identified through NVML only" if ctx.wsl
                     else "PCI sysfs not visible, identified through NVML only")
    if on_pci and len(on_pci) > len(devices):
        notes.append(f"{len(on_pci)} NVIDIA GPUs on the PCI bus but only {len(devices)} reported by the driver")
    pci_by_bdf = {fn.bdf: fn for fn in on_pci}
    for dev in devices:
        fn = pci_by_bdf.get(dev.bdf or "")
        if fn is not None:
            dev.numa_node = fn.numa_node
            dev.pci_device_id = dev.pci_device_id or fn.device
    mig = [d.index for d in devices if d.details.get("mig")]
    if mig:
        group.flags["mig"] = mig
        for index in mig:
            notes.append(f"MIG is enabled on GPU {index}: a vLLM process sees at most one MIG instance, "
                         "so tensor parallelism cannot span MIG slices")
    if devices and all(d.details.get("nvlink_active", 0) > 0 for d in devices):
        group.interconnect = "nvlink"
    cliques = {d.details["fabric"]["clique_id"] for d in devices
               if d.details.get("fabric") and not d.details["fabric"]["cluster_zero"]}
    if cliques and cliques != {0}:
        clique = sorted(cliques)[0]
        group.flags["fabric_clique"] = clique
        notes.append(f"NVLink fabric registered (clique {clique}): this tray is part of a multi-node NVLink domain")
    names = " ".join(d.name or "" for d in devices).upper()
    if any(d.details.get("c2c_enabled") for d in devices) or (
        ctx.arch == "aarch64" and any(tag in names for tag in ("GB", "GH"))
    ):
        group.flags["grace"] = True
    if any(d.memory_source == "host_meminfo" for d in devices):
        group.flags["unified_memory"] = True
        notes.append("unified memory: NVML reports no GPU memory, host RAM is used as the GPU's memory")
    if driver:
        group.flags["driver"] = driver
    lacking = sorted({f for d in devices for f in d.details.get("unreadable", [])})
    if lacking:
        status = "degraded" if status == "ok" else status
        reason += f"; could not read {', '.join(lacking)}"
    mem = group.mem_gib_each
    if mem:
        reason += f", {mem:.1f} GiB each"
    return ProbeResult(status, reason), group



def gpu_processes(facts: Any = None) -> dict[int, int]:
    """PID → GPU memory in bytes summed over all GPUs (NVML compute processes), for the launcher's
    per-process view; ``{}`` when NVML is unavailable. Never raises; opens and closes NVML.

    ``facts`` is a :class:`~vllm_deploy_wizard.detect.facts.Facts` (default: the live machine).
    """
    from vllm_deploy_wizard.detect.facts import LiveFacts

    facts = facts if facts is not None else LiveFacts()
    with nvml_session(lambda: facts.module("pynvml")) as session:
        return process_memory(session.module) if session.module is not None else {}
