"""The host CPU (docs/detection.md §3.4) and Intel QAT / DSA / IAA engines (§3.7).

Generation comes from ``cpu family``/``model`` (Linux ``intel-family.h``), never from flags:
a real Xeon 6972P on an older kernel shows no ``amx_fp16``, and a hypervisor can hide AMX. The
brand string only decides "is this a Xeon" (client Core parts must not map to a Xeon profile).
QAT counts physical functions bound to a QAT driver only; VFs (PF id + 1) are never counted.
"""

from __future__ import annotations

import re
from typing import Any

from vllm_deploy_wizard.detect.facts import Facts
from vllm_deploy_wizard.detect.inventory import CpuFacts, ProbeResult
from vllm_deploy_wizard.detect.pci import DSA_IDS, IAA_IDS, INTEL, QAT_DRIVERS, QAT_PF_IDS, PciFunction

#: (family, model) → (codename, seed profile it maps to, exact?). docs/detection.md §3.4 table.
INTEL_MODELS: dict[tuple[int, int], tuple[str, str, bool]] = {
    (6, 0xAD): ("Granite Rapids (P-core)", "xeon6", True),
    (6, 0xAE): ("Granite Rapids-D (P-core, edge)", "xeon6", True),
    (6, 0xAF): ("Sierra Forest (E-core)", "xeon6", False),
    (6, 0xDD): ("Clearwater Forest (E-core)", "xeon6", False),
    (6, 0xCF): ("Emerald Rapids", "xeon5", True),
    (6, 0x8F): ("Sapphire Rapids", "xeon5", False),
    (19, 0x01): ("Diamond Rapids", "xeon6", False),
}
#: Intel models whose P-cores have AMX (so a missing flag means "hidden", not "absent").
AMX_MODELS = frozenset({(6, 0x8F), (6, 0xCF), (6, 0xAD), (6, 0xAE), (19, 0x01)})
#: AMD family → microarchitecture by model (family 25 = Zen 3/4, 26 = Zen 5).
AMD_MODELS = {(25, 0x01): "Zen 3 (Milan)", (25, 0x11): "Zen 4 (Genoa)", (25, 0xA0): "Zen 4c (Siena)",
              (25, 0x18): "Zen 4 (Genoa-X)"}
ARM_PARTS = {"0xd4f": "Neoverse V2", "0xd40": "Neoverse V1", "0xd0c": "Neoverse N1", "0xd49": "Neoverse N2"}
FLAGS_OF_INTEREST = re.compile(r"^(amx\w*|avx512\w*|avx2|avx_vnni|hypervisor)$")


def parse_cpuinfo(text: str) -> dict[str, str]:
    """First processor block of /proc/cpuinfo → key → value (keys stripped, e.g. ``cpu family``)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        key, sep, value = line.partition(":")
        if sep and key.strip() not in out:
            out[key.strip()] = value.strip()
    return out


def _int(value: str | None) -> int | None:
    try:
        return int(value, 0) if value is not None else None
    except ValueError:
        return None


def _engines(cpu: CpuFacts, pci: list[PciFunction] | None, facts: Facts) -> None:
    for fn in pci or []:
        if fn.vendor != INTEL:
            continue
        if fn.klass.startswith("0x0b40") and fn.device in QAT_PF_IDS and fn.driver \
                and not fn.is_vf and any(d in fn.driver for d in QAT_DRIVERS):
            cpu.qat_devices.append({"bdf": fn.bdf, "device": fn.device, "driver": fn.driver,
                                    "numa_node": fn.numa_node, **fn.extra.get("qat", {})})
        elif fn.klass.startswith("0x0880") and fn.device in DSA_IDS:
            cpu.dsa += 1
        elif fn.klass.startswith("0x0880") and fn.device in IAA_IDS:
            cpu.iaa += 1
    cpu.qat_pfs = len(cpu.qat_devices)
    for name, dev in facts.idxd().items():
        enabled = sum(1 for wq in (dev.get("wqs") or {}).values()
                      if wq.get("type") == "user" and wq.get("state") == "enabled")
        if name.startswith("dsa"):
            cpu.dsa_user_wqs_enabled += enabled
        elif name.startswith("iax"):
            cpu.iaa_user_wqs_enabled += enabled
    cpu.qat_policy = facts.qat_config().get("POLICY")


def probe(facts: Facts, pci: list[PciFunction] | None) -> tuple[ProbeResult, CpuFacts]:
    """Read the CPU model, ISA flags, topology and Intel offload engines. Never raises."""
    info = parse_cpuinfo(facts.cpuinfo())
    topo = facts.cpu_topology()
    cpu = CpuFacts(arch=facts.arch(), sockets=topo.get("sockets"), logical_cpus=topo.get("logical_cpus"),
                   usable_cpus=topo.get("usable_cpus"))
    cpu.vendor_id = info.get("vendor_id")
    cpu.model_name = info.get("model name")
    cpu.family, cpu.model = _int(info.get("cpu family")), _int(info.get("model"))
    flags = set((info.get("flags") or info.get("Features") or "").split())
    cpu.flags = sorted(f for f in flags if FLAGS_OF_INTEREST.match(f))
    cpu.amx, cpu.avx512 = "amx_tile" in flags, "avx512f" in flags
    cpu.hypervisor = "hypervisor" in flags
    key = (cpu.family or -1, cpu.model or -1)
    if cpu.vendor_id == "GenuineIntel":
        cpu.vendor = "Intel"
        cpu.is_xeon = "xeon" in (cpu.model_name or "").lower()
        if key in INTEL_MODELS:
            cpu.microarch, generation, _exact = INTEL_MODELS[key]
            cpu.generation = generation if cpu.is_xeon or key[0] == 19 else None
        if cpu.is_xeon and key in AMX_MODELS and not cpu.amx and "E-core" not in (cpu.microarch or ""):
            cpu.notes.append("AMX is not exposed to this virtual machine; vLLM CPU will fall back to AVX-512"
                             if cpu.hypervisor else
                             "AMX flags are missing on an AMX-capable Xeon (kernel too old?); "
                             "vLLM CPU will use AVX-512")
    elif cpu.vendor_id == "AuthenticAMD":
        cpu.vendor = "AMD"
        cpu.microarch = AMD_MODELS.get(key) or ("Zen 5 (Turin)" if cpu.family == 26 else
                                                f"AMD family {cpu.family} model {cpu.model}")
        cpu.notes.append("Intel-only options (IAXL KVShrink, QAT/IAA) are not available on this host")
        if cpu.avx512:
            cpu.notes.append("vLLM on AMD CPUs uses the Zen CPU platform when zentorch is installed")
    elif "CPU implementer" in info or (cpu.arch or "").startswith(("aarch64", "arm")):
        cpu.vendor = "Arm"
        part = (info.get("CPU part") or "").lower()
        cpu.microarch = ARM_PARTS.get(part, f"Arm part {part}" if part else "Arm")
        cpu.model_name = cpu.model_name or cpu.microarch
    _engines(cpu, pci, facts)
    if not info:
        return ProbeResult("unavailable", "/proc/cpuinfo could not be read"), cpu
    what = cpu.model_name or cpu.microarch or cpu.vendor or "unknown CPU"
    extra = [f"{cpu.logical_cpus} CPUs" if cpu.logical_cpus else "", "AMX" if cpu.amx else "",
             "AVX-512" if cpu.avx512 else "", f"{cpu.qat_pfs} QAT" if cpu.qat_pfs else ""]
    return ProbeResult("ok", ", ".join([what, *[e for e in extra if e]])), cpu


def summary(cpu: CpuFacts) -> dict[str, Any]:
    """Short dict for display: vendor, model, microarch, generation, amx, avx512."""
    return {"vendor": cpu.vendor, "model": cpu.model_name, "microarch": cpu.microarch,
            "generation": cpu.generation, "amx": cpu.amx, "avx512": cpu.avx512}
