"""Google Cloud TPUs from PCI ids, VFIO/accel device nodes and TPU env vars, docs/detection.md §3.6.

Chips are distinct PCI base addresses (``domain:bus:device``); TensorCores are functions. The
seed counts chips for v6e and TensorCores for TPU7x (§4.3). tpu-info's ``get_local_chips()``
asserts on mixed chip types, so it is not called; chip owners come from ``/proc/*/fd`` through the
facts source. No metadata-server request is made (opt-in only per the spec).
"""

from __future__ import annotations

from vllm_deploy_wizard.detect.context import ProbeContext
from vllm_deploy_wizard.detect.inventory import GIB, AcceleratorGroup, Device, ProbeResult
from vllm_deploy_wizard.detect.pci import GOOGLE

#: PCI device id → (family key, cores per chip, nominal HBM GiB per chip).
TPU_IDS = {
    "0x006f": ("tpu:v6e", 1, 32), "0x0076": ("tpu:7x", 2, 192), "0x0062": ("tpu:v5p", 2, 95),
    "0x0063": ("tpu:v5e", 1, 16), "0x005e": ("tpu:v4", 2, 32), "0x0027": ("tpu:v2v3", 2, None),
}


def probe(ctx: ProbeContext) -> tuple[ProbeResult, AcceleratorGroup | None]:
    """Detect TPU chips. Never raises."""
    on_pci = ctx.by_vendor.get(GOOGLE, [])
    env = ctx.facts.env()
    if not on_pci:
        hint = env.get("TPU_ACCELERATOR_TYPE")
        suffix = f" (TPU_ACCELERATOR_TYPE={hint})" if hint else ""
        return ProbeResult("absent", "no TPU on the PCI bus" + suffix), None
    family, cores_per_chip, nominal = TPU_IDS.get(on_pci[0].device, (None, 1, None))
    chips: dict[str, list] = {}
    for fn in on_pci:
        chips.setdefault(fn.base_address, []).append(fn)
    per_core = family == "tpu:7x"
    units = on_pci if per_core else [fns[0] for fns in chips.values()]
    mem = int(nominal * GIB / (cores_per_chip if per_core else 1)) if nominal else None
    devices = [Device(brand="Google", kind="tpu", index=i, name=fn.name, pci_device_id=fn.device, bdf=fn.bdf,
                      numa_node=fn.numa_node, memory_bytes=mem, memory_source="nominal" if mem else None,
                      source="pci", details={"iommu_group": fn.iommu_group})
               for i, fn in enumerate(units)]
    group = AcceleratorGroup(brand="Google", kind="tpu", probe="tpu", devices=devices, count=len(devices),
                             unit="TensorCore" if per_core else "chip", family_hint=family, interconnect="ici")
    group.flags["chips"] = len(chips)
    if env.get("TPU_ACCELERATOR_TYPE"):
        group.flags["accelerator_type"] = env["TPU_ACCELERATOR_TYPE"]
    vfio = [f"/dev/vfio/{fn.iommu_group}" for fn in on_pci if fn.iommu_group is not None]
    reachable = [p for p in vfio if p in ctx.dev_nodes] or [p for p in ctx.dev_nodes if p.startswith("/dev/accel")]
    if not reachable:
        if ctx.in_container or not ctx.has_dev("/dev/vfio"):
            why = ("TPU chips are not passed into this container (/dev/vfio missing; run privileged or pass the "
                   "vfio devices)") if ctx.in_container \
                else "TPU chips present on the PCI bus but no /dev/vfio or /dev/accel node exists"
        else:
            why = "TPU chips present on the PCI bus but their /dev/vfio group nodes are missing (bind them to vfio-pci)"
        group.pci_only, group.access_reason = True, why
        group.notes.append(why)
        return ProbeResult("unavailable", why), group
    owners = ctx.facts.device_owners(reachable)
    if owners:
        pids = ", ".join(str(p) for p in sorted(set(owners.values())))
        group.notes.append(f"TPU chips are in use by another process (pid {pids})")
        group.flags["busy"] = sorted(set(owners.values()))
    return ProbeResult("ok", f"PCI/VFIO: {len(chips)} chip(s), {len(on_pci)} function(s)"), group
