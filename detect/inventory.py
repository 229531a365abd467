"""The detection result: what the node has, as plain dataclasses.

An :class:`Inventory` is what :func:`vllm_deploy_wizard.detect.detect` returns and what the matcher, the
wizard and ``vllm-wizard detect --json`` read. It is built by the probes (one module per vendor or
host area) from a :class:`~vllm_deploy_wizard.detect.facts.Facts` source, so a replayed fixture and the
live machine produce the same shapes.

Decisions:

* Dataclasses, not pydantic: the inventory is produced by our own code, never parsed from user
  input (fixtures are parsed by :mod:`.fixture`), and building it must stay cheap (detect target
  ≤ 150 ms). :meth:`Inventory.to_dict` gives the JSON form.
* Memory is stored in bytes (docs/detection.md §6); GiB only for display and matching.
* ``count`` of an :class:`AcceleratorGroup` is the physical count in the seed taxonomy's sense
  (docs/detection.md §4.3): GPUs, Ascend dies, TPU chips — never MIG slices or CPX partitions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

#: Status of one probe (docs/detection.md §0.2): it worked, worked through a fallback, found hardware it
#: cannot use, found nothing to probe, or failed unexpectedly (a bug, caught so detect never raises).
Status = Literal["ok", "degraded", "unavailable", "absent", "error"]
STATUSES: tuple[str, ...] = ("ok", "degraded", "unavailable", "absent", "error")

GIB = 1 << 30


@dataclass
class ProbeResult:
    """Outcome of one probe: ``status`` (one of :data:`STATUSES`) and a one-line human ``reason``."""

    status: Status
    reason: str


@dataclass
class Device:
    """One physical accelerator (GPU, NPU die, TPU chip) as the best available source reported it."""

    brand: str
    """Vendor as the seed taxonomy spells it: NVIDIA, AMD, Intel, Huawei, Google, Zhenwu."""
    kind: str
    """gpu | xpu | npu | tpu."""
    index: int
    name: str | None = None
    """Marketing name from the vendor library (``NVIDIA H200``) or the PCI id table."""
    pci_device_id: str | None = None
    """PCI device id, lower-case hex with ``0x`` (``0x2335``)."""
    bdf: str | None = None
    """PCI address ``dddd:bb:dd.f``, lower case."""
    compute_arch: str | None = None
    """``sm90``, ``gfx942``, … as the seed's ``compute_arch``."""
    memory_bytes: int | None = None
    memory_source: str | None = None
    """Where ``memory_bytes`` came from: nvml, nvidia-smi, amdsmi, sysfs, npu-smi, host_meminfo."""
    numa_node: int | None = None
    source: str = "pci"
    """Which layer identified the device: nvml, nvidia-smi, amdsmi, sysfs, npu-smi, xpu-smi, pci."""
    details: dict[str, Any] = field(default_factory=dict)
    """Vendor extras: uuid, mig, nvlink_active, partition modes, …"""


@dataclass
class AcceleratorGroup:
    """All devices of one vendor probe, summarised for matching (docs/detection.md §4.1)."""

    brand: str
    kind: str
    probe: str
    """Name of the probe that produced it (key in :attr:`Inventory.probes`)."""
    devices: list[Device]
    count: int
    """Physical units in the seed's sense (§4.3)."""
    unit: str = "GPU"
    """Singular noun for messages: GPU, NPU, chip."""
    visible: int | None = None
    """Units this shell may use after visibility variables; None when no variable restricts it."""
    interconnect: str = "pcie"
    """nvlink | xgmi | hccs | ici | pcie."""
    pci_only: bool = False
    """Seen on the PCI bus but no working library or device node (match quality ``pci_only``)."""
    access_reason: str | None = None
    """Why the group is ``pci_only`` (shown next to the profile)."""
    family_hint: str | None = None
    """Vendor-specific identity hint for the matcher, e.g. ``ascend:a2`` or ``amd:mi300x``."""
    notes: list[str] = field(default_factory=list)
    flags: dict[str, Any] = field(default_factory=dict)
    """mig, partitioned, grace, unified_memory, fabric_clique, …"""

    @property
    def mem_gib_each(self) -> float | None:
        """Median per-device memory in GiB, or None when no device reported memory."""
        values = sorted(d.memory_bytes for d in self.devices if d.memory_bytes)
        if not values:
            return None
        mid = len(values) // 2
        median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
        return median / GIB

    @property
    def total_memory_bytes(self) -> int:
        """Sum of known per-device memory (bytes); 0 when unknown."""
        return sum(d.memory_bytes or 0 for d in self.devices)

    @property
    def name(self) -> str | None:
        """The most common device name of the group."""
        names = [d.name for d in self.devices if d.name]
        return max(set(names), key=names.count) if names else None

    def units(self, n: int | None = None) -> str:
        """``unit`` pluralised for ``n`` (default :attr:`count`): ``1 GPU``, ``8 GPUs``, ``4 chips``."""
        n = self.count if n is None else n
        return self.unit if n == 1 else self.unit + "s"


@dataclass
class CpuFacts:
    """The host CPU (docs/detection.md §3.4) and Intel offload engines (§3.7)."""

    vendor: str | None = None
    """Intel | AMD | Arm | None (unknown)."""
    vendor_id: str | None = None
    model_name: str | None = None
    family: int | None = None
    model: int | None = None
    arch: str | None = None
    microarch: str | None = None
    """e.g. ``Granite Rapids (P-core)``, ``Zen 4 (Genoa)``."""
    generation: str | None = None
    """Seed CPU profile the model maps to (``xeon5``/``xeon6``) or None (§3.4 table)."""
    is_xeon: bool = False
    sockets: int | None = None
    logical_cpus: int | None = None
    usable_cpus: int | None = None
    """CPUs this process may run on (``sched_getaffinity``)."""
    amx: bool = False
    avx512: bool = False
    hypervisor: bool = False
    flags: list[str] = field(default_factory=list)
    """ISA flags of interest only (amx*, avx512*, avx2, hypervisor)."""
    qat_pfs: int = 0
    qat_devices: list[dict[str, Any]] = field(default_factory=list)
    dsa: int = 0
    iaa: int = 0
    dsa_user_wqs_enabled: int = 0
    iaa_user_wqs_enabled: int = 0
    qat_policy: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class NumaNode:
    """One NUMA node: ``cpus`` (count of CPUs in its cpulist, 0 for memory-only HBM nodes)."""

    id: int
    cpus: int
    cpulist: str
    mem_bytes: int | None
    free_bytes: int | None = None
    """``MemFree`` of the node now (what a CPU KV cache on this node can take)."""
    available_bytes: int | None = None
    """``MemFree + Active(file) + Inactive(file) + SReclaimable`` of the node now: the free memory
    vLLM's CPU worker checks its ``--gpu-memory-utilization`` share against at start."""


@dataclass
class Disk:
    """Free space at a candidate KV-tier path (docs/detection.md §5.4)."""

    path: str
    total_bytes: int
    free_bytes: int
    fs_type: str | None = None
    shared: bool = False
    """Network filesystem (nfs, lustre, …): one cache pooled across instances."""


@dataclass
class NetPort:
    """An RDMA port or Ethernet interface (docs/detection.md §5.3)."""

    name: str
    kind: str
    """infiniband | roce | ethernet."""
    state: str | None = None
    rate_gbps: float | None = None
    numa_node: int | None = None
    netdev: str | None = None


@dataclass
class HostFacts:
    """Host memory, NUMA, disks, network and environment (docs/detection.md §5)."""

    arch: str | None = None
    kernel: str | None = None
    mem_total_bytes: int | None = None
    mem_available_bytes: int | None = None
    ram_bytes: int | None = None
    """Host RAM for KV offload: sum over NUMA nodes with CPUs (§5.1), else MemTotal."""
    cgroup_limit_bytes: int | None = None
    cgroup_usage_bytes: int | None = None
    """Memory the container uses now (cgroup ``memory.current``), None outside a limited cgroup."""
    numa_nodes: list[NumaNode] = field(default_factory=list)
    shm_total_bytes: int | None = None
    """Size of ``/dev/shm`` (POSIX shared memory: vLLM's message rings, NCCL), None when unknown."""
    shm_free_bytes: int | None = None
    """Free space of ``/dev/shm`` now, None when unknown."""
    disks: list[Disk] = field(default_factory=list)
    ports: list[NetPort] = field(default_factory=list)
    fabric: str = "none"
    """infiniband | roce | ethernet | none (multi-node strategies need one)."""
    default_iface: str | None = None
    """Default for ``$IFACE_NAME``."""
    primary_ip: str | None = None
    """Default for ``$HEAD_IP``."""
    in_container: bool = False
    container_hints: list[str] = field(default_factory=list)
    wsl: bool = False
    visibility: dict[str, str] = field(default_factory=dict)
    preload_libraries: list[str] = field(default_factory=list)
    """TCMalloc then Intel OpenMP libraries present (vLLM CPU's ``LD_PRELOAD``, docs/backends.md §7)."""
    """Device-control variables that are set, name → value."""
    notes: list[str] = field(default_factory=list)

    @property
    def numa_nodes_with_cpus(self) -> int:
        """NUMA nodes that have CPUs (memory-only GPU HBM nodes excluded)."""
        return sum(1 for n in self.numa_nodes if n.cpus > 0)


@dataclass
class Tool:
    """An installed program or distribution: version (None = unknown), executable path, notes."""

    installed: bool = False
    version: str | None = None
    executable: str | None = None
    source: str | None = None
    """How it was found: dist-info, path, shebang."""


@dataclass
class SoftwareFacts:
    """Installed software relevant to deployment (docs/detection.md §5.5); read without importing it."""

    vllm: Tool = field(default_factory=Tool)
    vllm_build: str | None = None
    """cpu | rocm | cuda | xpu | None, from the version's local label."""
    lmcache: Tool = field(default_factory=Tool)
    vllm_router: Tool = field(default_factory=Tool)
    docker: Tool = field(default_factory=Tool)
    docker_server: str | None = None
    docker_socket_accessible: bool | None = None
    docker_nvidia_runtime: bool | None = None
    packages: dict[str, str] = field(default_factory=dict)
    """Other distributions found: torch, vllm-ascend, libtpu, nvidia-ml-py, amdsmi, …"""
    notes: list[str] = field(default_factory=list)


@dataclass
class Inventory:
    """Everything detect found. ``accelerators`` is ordered: the primary group first."""

    probes: dict[str, ProbeResult] = field(default_factory=dict)
    accelerators: list[AcceleratorGroup] = field(default_factory=list)
    cpu: CpuFacts = field(default_factory=CpuFacts)
    host: HostFacts = field(default_factory=HostFacts)
    software: SoftwareFacts = field(default_factory=SoftwareFacts)
    notes: list[str] = field(default_factory=list)
    """Node-level notes (mixed vendors, platform mismatch)."""
    source: str = "live"
    """``live`` or the fixture path replayed."""
    elapsed_ms: float | None = None

    @property
    def primary(self) -> AcceleratorGroup | None:
        """The accelerator group vLLM would use (§4.1), or None for a CPU-only node."""
        return self.accelerators[0] if self.accelerators else None

    @property
    def device_count(self) -> int:
        """Physical units of the primary group (what ``plan --gpus`` defaults to); 0 if CPU-only."""
        return self.primary.count if self.primary else 0

    def all_notes(self) -> list[str]:
        """Every note of the inventory: node, accelerator groups, CPU, host, software, in that order."""
        out = list(self.notes)
        for group in self.accelerators:
            out += group.notes
        return out + self.cpu.notes + self.host.notes + self.software.notes

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (bytes stay bytes; derived fields such as ``mem_gib_each`` added)."""
        data = dataclasses.asdict(self)
        for g_dict, group in zip(data["accelerators"], self.accelerators, strict=True):  # asdict keeps the list
            g_dict["name"] = group.name
            g_dict["mem_gib_each"] = round(group.mem_gib_each, 1) if group.mem_gib_each else None
        data["device_count"] = self.device_count
        from vllm_deploy_wizard.detect.hints import deployment_hints  # hints import this module

        data["hints"] = deployment_hints(self)
        data["host"]["numa_nodes_with_cpus"] = self.host.numa_nodes_with_cpus
        return data
