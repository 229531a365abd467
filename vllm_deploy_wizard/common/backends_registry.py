"""The hardware backends, each named once: brand, family, kind and the piece every layer writes for it.

Data only (strings and frozen dataclasses, no project import: this is the ``common`` layer).
detect, catalog, the launcher and the Kubernetes engine read their per-backend facts here instead
of keeping their own brand tables (docs/backends.md §13):

* detect: the PCI vendor id, kind and unit noun of :mod:`detect.pci`; the vendor probe module
  (:data:`PROBE_ORDER`), which platform vLLM prefers (:data:`PLATFORM_ORDER`), the visibility
  variables :mod:`detect.visibility` reads;
* catalog: which :class:`catalog.backends.Backend` family a hardware profile is
  (:func:`family_for_profile`, :data:`PROFILE_MATCH_ORDER`);
* launcher: the device-memory reader of :mod:`launcher.devmem`, the device tool a failure cause
  names (:mod:`launcher.causes.context`), the device-plugin resource a pod requests
  (:mod:`launcher.engines.kubernetes`).

A piece a backend does not have is an :class:`Absent` with its reason, never a silent empty
value, so ``tests/test_backends_registry.py`` can tell "forgot to write it" from "has none".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Absent:
    """A piece a backend has none of; ``reason`` says why (shown in docs and test failures)."""

    reason: str


@dataclass(frozen=True)
class KubernetesResource:
    """A device-plugin resource a pod requests (``nvidia.com/gpu``); ``arch``: the compute arch it
    applies to (Intel's device plugin names the resource after the kernel driver: the catalog's ``xpu``
    profiles, Arc Pro B-series, bind ``xe``; ``i915`` for older parts detected with that driver), ``""`` for any."""

    name: str
    arch: str = ""


@dataclass(frozen=True)
class BackendEntry:
    """One hardware backend.

    ``family``: the catalog family key (``catalog.backends.BACKENDS``); ``brand``: the vendor as
    seed profiles and inventories spell it; ``kind``: the accelerator kind of its devices
    (``Device.kind``: gpu, npu, tpu, xpu, ppu, cpu); ``unit``: the noun for one device;
    ``pci_vendor``: PCI vendor id (lower-case ``0x`` hex) its accelerators carry;
    ``detect_probe``: module name under ``detect/`` whose ``probe(ctx)`` finds them;
    ``profile_generations``: seed ``generation`` keys that select this family;
    ``profile_brand``: whether the brand alone selects it (Intel: only the CPU family does, XPUs
    by generation); ``visibility_vars``: device-control variables the vendor runtime honours, in
    its order (detect reads them); ``memory_reader``: function name in ``launcher/devmem.py``;
    ``k8s_resources``: device-plugin resources; ``device_tool``: the vendor command that shows the
    devices and what holds them; ``log_device``: the device word the launcher's failure causes
    use for this backend (``launcher/causes/context.py`` ``_device_kind``).
    """

    family: str
    brand: str
    kind: str
    unit: str
    pci_vendor: str | Absent
    detect_probe: str | Absent
    profile_generations: tuple[str, ...]
    profile_brand: bool
    visibility_vars: tuple[str, ...] | Absent
    memory_reader: str | Absent
    k8s_resources: tuple[KubernetesResource, ...] | Absent
    device_tool: str | Absent
    log_device: str | Absent


_CPU_HOST = "the CPU backend runs on host cores and RAM"

BACKENDS: tuple[BackendEntry, ...] = (
    BackendEntry("cuda", "NVIDIA", "gpu", "GPU", "0x10de", "nvidia", (), True, ("CUDA_VISIBLE_DEVICES",),
                 "read_nvml", (KubernetesResource("nvidia.com/gpu"),), "nvidia-smi", "cuda"),
    BackendEntry("rocm", "AMD", "gpu", "GPU", "0x1002", "amd", (), True,
                 ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"),
                 "read_amdsmi", (KubernetesResource("amd.com/gpu"),), "amd-smi list", "hip"),
    BackendEntry("ascend", "Huawei", "npu", "NPU", "0x19e5", "ascend", ("npu",), True, ("ASCEND_RT_VISIBLE_DEVICES",),
                 "read_npu_smi", (KubernetesResource("huawei.com/Ascend910"),), "npu-smi info", "npu"),
    BackendEntry("ppu", "Zhenwu", "ppu", "PPU", "0x1ded",
                 Absent("no public driver interface: PPUs are reported from the PCI scan only"),
                 ("ppu",), True, Absent("the vendor documents no device-control variable"),
                 Absent("no public memory query"), Absent("no published device plugin"),
                 Absent("no public device tool"), Absent("no vLLM log word identifies the PPU runtime")),
    BackendEntry("tpu", "Google", "tpu", "chip", "0x1ae0", "tpu", ("tpu",), True, ("TPU_VISIBLE_CHIPS",),
                 Absent("TPU memory is held by the VM's single libtpu client; no per-pid query"),
                 (KubernetesResource("google.com/tpu"),), "tpu-info", "tpu"),
    BackendEntry("xpu", "Intel", "xpu", "GPU", "0x8086", "intel_xpu", ("xpu",), False, ("ZE_AFFINITY_MASK",),
                 Absent("no per-pid memory query is read for Level Zero devices yet"),
                 (KubernetesResource("gpu.intel.com/xe", "xpu"), KubernetesResource("gpu.intel.com/xe", "xe"),
                  KubernetesResource("gpu.intel.com/i915", "i915")),
                 "xpu-smi discovery", "xpu"),
    BackendEntry("cpu", "Intel", "cpu", "CPU", Absent(_CPU_HOST), Absent(_CPU_HOST), ("cpu",), True,
                 Absent(_CPU_HOST), Absent(_CPU_HOST), Absent(_CPU_HOST), Absent(_CPU_HOST), Absent(_CPU_HOST)),
)

#: Vendor probes in the order detection runs them (families).
PROBE_ORDER: tuple[str, ...] = ("cuda", "rocm", "xpu", "ascend", "tpu")
#: Which platform vLLM would use when several are usable (docs/detection.md §1 plugin order; Ascend
#: is out-of-tree), as families of accelerators.
PLATFORM_ORDER: tuple[str, ...] = ("tpu", "cuda", "rocm", "ascend", "xpu", "ppu")
#: The order :func:`family_for_profile` tries families; the last is the fallback of any profile.
PROFILE_MATCH_ORDER: tuple[str, ...] = ("tpu", "rocm", "ascend", "ppu", "xpu", "cpu", "cuda")


def entry(family: str) -> BackendEntry:
    """The entry of a family key; KeyError naming the registered families for any other."""
    for e in BACKENDS:
        if e.family == family:
            return e
    raise KeyError(f"unknown backend family {family!r}; registered: {', '.join(e.family for e in BACKENDS)}")


def present(value: object) -> bool:
    """True unless ``value`` is :class:`Absent`."""
    return not isinstance(value, Absent)


def family_for_profile(brand: str | None, generation: str | None) -> str:
    """The family of a hardware profile from its ``generation`` then ``brand``: the first family of
    :data:`PROFILE_MATCH_ORDER` whose generations hold ``generation`` or (``profile_brand``) whose
    brand is ``brand``; the last family (``cuda``) otherwise."""
    for family in PROFILE_MATCH_ORDER:
        e = entry(family)
        if generation in e.profile_generations or (e.profile_brand and brand == e.brand):
            return family
    return PROFILE_MATCH_ORDER[-1]


def accelerator_family(brand: str | None) -> str | None:
    """The family of ``brand``'s accelerators (one with a PCI vendor id: Intel → ``xpu``, not
    ``cpu``); None for a brand the registry does not know."""
    return next((e.family for e in BACKENDS if e.brand == brand and isinstance(e.pci_vendor, str)), None)


def probe_modules() -> tuple[str, ...]:
    """Detect probe module names in :data:`PROBE_ORDER` (``nvidia``, ``amd``, …)."""
    return tuple(str(entry(f).detect_probe) for f in PROBE_ORDER)


def platform_brands() -> tuple[str, ...]:
    """Brands in :data:`PLATFORM_ORDER` (``Google``, ``NVIDIA``, …)."""
    return tuple(entry(f).brand for f in PLATFORM_ORDER)


def pci_vendors() -> dict[str, tuple[str, str, str]]:
    """PCI vendor id → (brand, kind, unit noun) of every backend with accelerators on PCI."""
    return {e.pci_vendor: (e.brand, e.kind, e.unit) for e in BACKENDS if isinstance(e.pci_vendor, str)}


def pci_vendor(family: str) -> str:
    """The PCI vendor id of ``family``; KeyError when it has none."""
    vendor = entry(family).pci_vendor
    if isinstance(vendor, Absent):
        raise KeyError(f"backend family {family!r} has no PCI vendor id: {vendor.reason}")
    return vendor


def visibility_variables() -> dict[str, tuple[str, ...]]:
    """Brand → device-control variables the runtime honours (backends that have some)."""
    return {e.brand: e.visibility_vars for e in BACKENDS if isinstance(e.visibility_vars, tuple)}


def memory_readers() -> tuple[str, ...]:
    """``launcher/devmem.py`` reader function names, in registry order."""
    return tuple(e.memory_reader for e in BACKENDS if isinstance(e.memory_reader, str))


def device_tools() -> dict[str, str]:
    """Failure-cause device word (``cuda``, ``hip``, ``npu``…) → the vendor's device tool command."""
    return {e.log_device: e.device_tool for e in BACKENDS
            if isinstance(e.log_device, str) and isinstance(e.device_tool, str)}


def device_resources() -> dict[str, str]:
    """``brand`` (or ``brand/arch`` for an arch-specific plugin) → device-plugin resource name."""
    out: dict[str, str] = {}
    for e in BACKENDS:
        for r in e.k8s_resources if isinstance(e.k8s_resources, tuple) else ():
            out[f"{e.brand}/{r.arch}" if r.arch else e.brand] = r.name
    return out


def device_resource(brand: str | None, arch: str | None = None) -> str | None:
    """The device-plugin resource a pod of ``brand`` requests (an arch-specific plugin only for its
    ``arch``); None for CPUs, unknown brands and an arch no plugin of the brand serves."""
    if not brand:
        return None
    for e in BACKENDS:
        if e.brand != brand or not isinstance(e.k8s_resources, tuple):
            continue
        for r in e.k8s_resources:
            if not r.arch or r.arch == arch:
                return r.name
    return None
