"""The PCI layer (docs/detection.md §2): what *should* be there, before any vendor library is loaded.

:func:`scan` turns the raw PCI entries of a :class:`~vllm_deploy_wizard.detect.facts.Facts` source into
:class:`PciFunction` objects and keeps the accelerators: display (0x03xx) and processing
accelerator (0x12xx) classes of the known vendors, excluding bridges, audio functions, the ASPEED
BMC VGA, SR-IOV virtual functions and Intel client iGPUs at 00:02.0. The id tables below are the
ones in docs/detection.md §2 / §3.7; names are decoration for pci_only reports, never required.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from vllm_deploy_wizard.common import backends_registry
from vllm_deploy_wizard.detect.facts import Facts

NVIDIA, AMD, INTEL, HUAWEI, GOOGLE, THEAD = (backends_registry.pci_vendor(f)
                                              for f in ("cuda", "rocm", "xpu", "ascend", "tpu", "ppu"))

#: PCI vendor id → (brand as the seed spells it, device kind, unit noun), from the backend registry
#: (docs/backends.md §13).
VENDORS: dict[str, tuple[str, str, str]] = backends_registry.pci_vendors()

#: (vendor, device) → (name, nominal memory GiB or None). docs/detection.md §2 table.
DEVICE_NAMES: dict[tuple[str, str], tuple[str, float | None]] = {
    (NVIDIA, "0x2330"): ("NVIDIA H100 80GB HBM3", 80),
    (NVIDIA, "0x2335"): ("NVIDIA H200", 141),
    (NVIDIA, "0x233b"): ("NVIDIA H200 NVL", 141),
    (NVIDIA, "0x2901"): ("NVIDIA B200", 180),
    (NVIDIA, "0x2941"): ("NVIDIA GB200", 192),
    (NVIDIA, "0x31c2"): ("NVIDIA GB300", 288),
    (NVIDIA, "0x26b9"): ("NVIDIA L40S", 48),
    (NVIDIA, "0x2348"): ("NVIDIA GH200 144G HBM3e", 144),
    (NVIDIA, "0x2684"): ("NVIDIA GeForce RTX 4090", 24),
    (AMD, "0x74a1"): ("AMD Instinct MI300X", 192),
    (AMD, "0x74b5"): ("AMD Instinct MI300X (VF)", 192),
    (AMD, "0x74a9"): ("AMD Instinct MI300X HF", 192),
    (AMD, "0x74bd"): ("AMD Instinct MI300X HF (VF)", 192),
    (AMD, "0x74a5"): ("AMD Instinct MI325X", 256),
    (AMD, "0x74b9"): ("AMD Instinct MI325X (VF)", 256),
    (AMD, "0x74a2"): ("AMD Instinct MI308X", 128),
    (AMD, "0x74a0"): ("AMD Instinct MI300A", 128),
    (AMD, "0x75a0"): ("AMD Instinct MI350X", 288),
    (AMD, "0x75a3"): ("AMD Instinct MI355X", 288),
    (INTEL, "0xe211"): ("Intel Arc Pro B60", 24),
    (INTEL, "0x0bd5"): ("Intel Data Center GPU Max 1550", 128),  # two tiles of 64 GB HBM2e
    (INTEL, "0xe212"): ("Intel Arc Pro B50", 16),
    (INTEL, "0xe223"): ("Intel Arc Pro B70", 32),
    (INTEL, "0xe220"): ("Intel Arc (BMG-G31)", None),
    (INTEL, "0xe221"): ("Intel Arc (BMG-G31)", None),
    (HUAWEI, "0xd100"): ("Ascend 310", None),
    (HUAWEI, "0xd500"): ("Ascend 310P", None),
    (HUAWEI, "0xd801"): ("Ascend 910", None),
    (HUAWEI, "0xd802"): ("Ascend 910B (Atlas A2)", 64),
    (HUAWEI, "0xd803"): ("Ascend 910C (Atlas A3)", 64),
    (GOOGLE, "0x005e"): ("TPU v4", 32),
    (GOOGLE, "0x0062"): ("TPU v5p", 95),
    (GOOGLE, "0x0063"): ("TPU v5e", 16),
    (GOOGLE, "0x006f"): ("TPU v6e", 32),
    (GOOGLE, "0x0076"): ("TPU7x", 192),
    (GOOGLE, "0x0027"): ("TPU v2/v3", None),
}

#: Intel GPU ids treated as data-centre/workstation XPUs (Battlemage); other Intel display
#: functions (client iGPUs) are not accelerators.
INTEL_XPU_IDS = frozenset({"0xe211", "0xe212", "0xe223", "0xe220", "0xe221", "0x0bd5"})
#: QAT Gen4+ physical functions (§3.7); VFs are PF+1 and never counted.
QAT_PF_IDS = frozenset({"0x4940", "0x4942", "0x4944", "0x4946", "0x4948"})
QAT_DRIVERS = ("qat", "4xxx", "420xx", "c6xx", "c3xxx", "200xx", "dh895xcc")
DSA_IDS = frozenset({"0x0b25", "0x11fb", "0x1212"})
IAA_IDS = frozenset({"0x0cfe", "0x1216"})
ASPEED = "0x1a03"
#: SR-IOV VF drivers end in ``vf`` (ixgbevf, qat_4xxxvf, mlx5_vf…); ``vfio-pci`` is not one.
_VF_DRIVER = re.compile(r"vf$|_vf\b")


@dataclass
class PciFunction:
    """One PCI function: ids as lower-case ``0x`` hex strings, ``klass`` the 24-bit class code."""

    bdf: str
    vendor: str
    device: str
    klass: str
    driver: str | None = None
    numa_node: int | None = None
    iommu_group: int | None = None
    subsystem_vendor: str | None = None
    subsystem_device: str | None = None
    is_vf: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def brand(self) -> str | None:
        """Seed brand of the vendor id, or None for an unknown vendor."""
        return VENDORS.get(self.vendor, (None,))[0]

    @property
    def name(self) -> str | None:
        """Name from :data:`DEVICE_NAMES`, or None."""
        entry = DEVICE_NAMES.get((self.vendor, self.device))
        return entry[0] if entry else None

    @property
    def nominal_gib(self) -> float | None:
        """Nominal per-device memory (GiB) from :data:`DEVICE_NAMES`, for pci_only devices."""
        entry = DEVICE_NAMES.get((self.vendor, self.device))
        return entry[1] if entry else None

    @property
    def function(self) -> int:
        """The function number (last digit of the BDF)."""
        return int(self.bdf.rsplit(".", 1)[-1], 16) if "." in self.bdf else 0

    @property
    def base_address(self) -> str:
        """``domain:bus:device`` (TPU chips group their TensorCore functions by it)."""
        return self.bdf.rsplit(".", 1)[0]


def _hex(value: Any, width: int) -> str | None:
    if value is None:
        return None
    try:
        number = int(str(value), 16) if isinstance(value, str) else int(value)
    except ValueError:
        return None
    return f"0x{number:0{width}x}"


def parse(entry: dict[str, Any]) -> PciFunction:
    """A raw PCI entry (fixture/live dict) → :class:`PciFunction`; ids normalised to lower hex."""
    klass = _hex(entry.get("class"), 6) or "0x000000"
    driver = entry.get("driver")
    numa = entry.get("numa_node")
    group = entry.get("iommu_group")
    return PciFunction(
        bdf=str(entry.get("bdf", "")).lower(),
        vendor=_hex(entry.get("vendor"), 4) or "0x0000",
        device=_hex(entry.get("device"), 4) or "0x0000",
        klass=klass,
        driver=str(driver) if driver else None,
        numa_node=int(numa) if isinstance(numa, int) and numa >= 0 else None,
        iommu_group=int(group) if isinstance(group, int) or (isinstance(group, str) and group.isdigit()) else None,
        subsystem_vendor=_hex(entry.get("subsystem_vendor"), 4),
        subsystem_device=_hex(entry.get("subsystem_device"), 4),
        is_vf=bool(entry.get("physfn")) or _VF_DRIVER.search(str(driver or "").lower()) is not None,
        extra={k: entry[k] for k in ("qat", "sriov_numvfs") if k in entry},
    )


def scan(facts: Facts) -> list[PciFunction] | None:
    """All PCI functions the facts report (None = no PCI sysfs, e.g. WSL)."""
    raw = facts.pci()
    if raw is None:
        return None
    return [parse(e) for e in raw]


def is_accelerator(fn: PciFunction) -> bool:
    """True for a function that is an accelerator of a known vendor (exclusion rules of §2)."""
    if fn.vendor not in VENDORS or fn.is_vf or fn.vendor == ASPEED:
        return False
    major = fn.klass[:4]
    if major not in ("0x03", "0x12"):
        return False
    if fn.vendor == INTEL:
        return fn.device in INTEL_XPU_IDS and not fn.bdf.endswith("00:02.0")
    if fn.vendor == AMD and major == "0x03":
        # Radeon display parts are not Instinct accelerators unless their id is in the table.
        return (fn.vendor, fn.device) in DEVICE_NAMES
    return True


def accelerators_by_vendor(functions: list[PciFunction] | None) -> dict[str, list[PciFunction]]:
    """Accelerator functions grouped by vendor id (empty when PCI is unavailable)."""
    grouped: dict[str, list[PciFunction]] = {}
    for fn in functions or []:
        if is_accelerator(fn):
            grouped.setdefault(fn.vendor, []).append(fn)
    return grouped
