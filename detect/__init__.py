"""vllm_deploy_wizard.detect — what this node has, and which hardware profile fits (contracts §4).

```python
from vllm_deploy_wizard.detect import detect, match_profiles
inv = detect()                                   # Inventory; never raises
cands = match_profiles(inv, cat.taxonomy.hardware_profiles)   # [Candidate(profile_id, quality, notes)]
```

Layering (docs/detection.md §0): the PCI scan runs first and needs nothing; vendor probes (NVML,
amdsmi, npu-smi, xe sysfs, VFIO) fill in names, memory and links; host, CPU and software probes
follow. Every probe runs inside :func:`_guarded`, so a bug in one becomes an ``error`` status
with its reason instead of an exception. ``detect(facts=FixtureFacts.load(path))`` replays a
fixture through the same code (``vllm-wizard detect --replay``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from importlib import import_module
from typing import Any

from vllm_deploy_wizard.common import backends_registry
from vllm_deploy_wizard.detect import cpu, host, pci, software, visibility
from vllm_deploy_wizard.detect.context import ProbeContext
from vllm_deploy_wizard.detect.facts import Facts, LiveFacts
from vllm_deploy_wizard.detect.inventory import (
    AcceleratorGroup,
    CpuFacts,
    Device,
    HostFacts,
    Inventory,
    ProbeResult,
    SoftwareFacts,
)
from vllm_deploy_wizard.detect.match import Candidate, match_profiles

__all__ = ["detect", "match_profiles", "Inventory", "Candidate", "ProbeResult", "Device", "AcceleratorGroup",
           "Facts", "LiveFacts", "VENDOR_PROBES"]

#: Vendor probes in the order they run: (probe name, function(ProbeContext) -> (ProbeResult, group)).
#: The modules are the backend registry's ``detect_probe`` names (docs/backends.md §13).
VENDOR_PROBES: tuple[tuple[str, Callable[[ProbeContext], Any]], ...] = tuple(
    (name, import_module(f"{__name__}.{name}").probe) for name in backends_registry.probe_modules())
#: Which platform vLLM would use when several are usable (§1 plugin order; Ascend is out-of-tree).
PLATFORM_ORDER = backends_registry.platform_brands()


def _guarded(name: str, probes: dict[str, ProbeResult], fn: Callable[[], Any], default: Any) -> Any:
    """Run one probe; an unexpected exception becomes status ``error`` (detect never raises)."""
    try:
        result, value = fn()
    except Exception as exc:  # noqa: BLE001 - the whole point: no probe may break detection
        probes[name] = ProbeResult("error", f"{type(exc).__name__}: {exc}")
        return default
    probes[name] = result
    return value


def _platform_notes(inv: Inventory) -> None:
    """Notes that need more than one probe: other vendors found, vLLM build vs hardware (§1)."""
    primary = inv.primary
    for other in inv.accelerators[1:]:
        if primary is not None and not other.pci_only:
            inv.notes.append(f"also found {other.count} {other.name or other.brand}; vLLM uses one platform per "
                             f"process, so only the {primary.brand} {primary.units()} are used")
    build = inv.software.vllm_build
    if primary is None or primary.pci_only or not build:
        return
    if build == "cpu":
        inv.notes.append(f"the installed vLLM is a CPU build (+cpu): it will not use the {primary.count} "
                         f"{primary.brand} {primary.units()}")
    elif (build == "rocm" and primary.brand != "AMD") or (build == "cuda" and primary.brand != "NVIDIA") \
            or (build == "xpu" and primary.brand != "Intel"):
        inv.notes.append(f"the installed vLLM is a {build} build but the accelerators are {primary.brand}")


def detect(facts: Facts | None = None,
           vendor_probes: tuple[tuple[str, Callable[[ProbeContext], Any]], ...] = VENDOR_PROBES) -> Inventory:
    """Detect this node (or replay ``facts``). Never raises; see each ``inv.probes[name]``.

    Probe names: pci, host, cpu, software and those of ``vendor_probes`` (default
    :data:`VENDOR_PROBES`: nvidia, amd, intel_xpu, ascend, tpu).
    """
    started = time.perf_counter()
    facts = facts if facts is not None else LiveFacts()
    inv = Inventory(source=facts.name)
    probes = inv.probes

    def scan_pci() -> tuple[ProbeResult, Any]:
        functions = pci.scan(facts)
        if functions is None:
            return ProbeResult("unavailable", "PCI sysfs (/sys/bus/pci/devices) is not visible"), None
        accel = sum(len(v) for v in pci.accelerators_by_vendor(functions).values())
        return ProbeResult("ok", f"{len(functions)} relevant PCI function(s), {accel} accelerator(s)"), functions

    functions = _guarded("pci", probes, scan_pci, None)
    inv.host = _guarded("host", probes, lambda: host.probe(facts), HostFacts())
    inv.cpu = _guarded("cpu", probes, lambda: cpu.probe(facts, functions), CpuFacts())
    try:
        dev_nodes = facts.dev_nodes()
    except Exception:  # noqa: BLE001 - an unreadable /dev only loses device-node evidence
        dev_nodes = []
    ctx = ProbeContext(facts=facts, pci=functions, by_vendor=pci.accelerators_by_vendor(functions),
                       dev_nodes=dev_nodes, in_container=inv.host.in_container, arch=inv.host.arch,
                       wsl=inv.host.wsl, mem_total_bytes=inv.host.mem_total_bytes)
    groups: list[AcceleratorGroup] = []
    for name, fn in vendor_probes:
        group = _guarded(name, probes, partial(fn, ctx), None)
        if group is not None:
            try:
                visibility.apply(group, facts.env())
            except Exception as exc:  # noqa: BLE001 - unreadable visibility variables only lose the narrowing
                group.notes.append(f"visibility variables could not be read ({exc})")
            groups.append(group)
    groups.sort(key=lambda g: (g.pci_only, PLATFORM_ORDER.index(g.brand) if g.brand in PLATFORM_ORDER else 99,
                               -g.total_memory_bytes))
    inv.accelerators = groups
    inv.software = _guarded("software", probes, lambda: software.probe(facts), SoftwareFacts())
    _platform_notes(inv)
    inv.elapsed_ms = (time.perf_counter() - started) * 1000
    return inv
