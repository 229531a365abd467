"""Inventory → ranked hardware-profile candidates (docs/detection.md §4).

Identity first, count second, memory only as a check:

1. :func:`identify` maps the primary accelerator group to a *family* of seed profile ids using
   the name / PCI id / compute-arch rules of §4.4 (more specific names first: GB300 before B300);
   a part with no profile of its own maps to the nearest family plus a note.
2. Within the family the count picks the id (§4.2 step 3): exact count, else the largest count
   below the detected one, else the smallest above; the others follow as alternatives, nearest
   count first.
3. Memory per unit is compared with ``vram_gb / gpu_count`` with the 0.90–1.05 band (§4.2 step 4,
   the measured ratios in §4.2's table); outside it the id stays but the quality drops to nearest.
4. ``pci_only`` groups keep the id and say why. Quality precedence: pci_only > nearest >
   count_mismatch > exact; all notes are kept.

A node without an accelerator maps to the CPU backend profiles (``generation: cpu``) by the Intel
family/model table of §3.4; AMD and Arm hosts get the nearest (``xeon6``) with a note. Note texts
follow the vocabulary of §4.6 and the fixtures' expected notes.

Profiles are any mapping id → object with ``brand``, ``generation``, ``gpu_count``, ``vram_gb``
(the catalog's ``HardwareProfile`` or a ``SimpleNamespace`` of the seed JSON), so this module does
not depend on the catalog's classes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vllm_deploy_wizard.common import backends_registry
from vllm_deploy_wizard.detect.cpu import INTEL_MODELS
from vllm_deploy_wizard.detect.inventory import AcceleratorGroup, CpuFacts, Inventory

QUALITIES = ("exact", "count_mismatch", "nearest", "pci_only", "none")
_RANK = {q: i for i, q in enumerate(QUALITIES)}
#: Memory ratio band accepted as "the same part" (§4.2 step 4).
MEMORY_BAND = (0.90, 1.05)
#: Profiles whose seed IAXL entry is unsupported (§3.7 eligibility).
IAXL_EXCLUDED = frozenset({"gb200", "gb300", "dgx_station_gb300", "dgx_spark_gb10", "vr200"})
#: Families matched by name only; memory differs between public sources and the seed (§4.5).
NO_MEMORY_CHECK = frozenset({"ascend_950pr", "ascend_950pr_8x", "ascend_950dt", "ascend_950dt_8x"})


@dataclass
class Candidate:
    """One ranked profile: ``profile_id`` (None only for quality ``none``), ``quality`` and notes."""

    profile_id: str | None
    quality: str
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON form ``{profile_id, quality, notes}``."""
        return {"profile_id": self.profile_id, "quality": self.quality, "notes": list(self.notes)}


@dataclass
class Family:
    """Result of :func:`identify`: profile ids of the family, whether it is only the nearest
    family, and notes that go with every candidate of it."""

    ids: list[str]
    nearest: bool = False
    notes: list[str] = field(default_factory=list)


def _worse(a: str, b: str) -> str:
    return a if _RANK[a] >= _RANK[b] else b


def _has(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.I) is not None


def _nvidia(group: AcceleratorGroup) -> Family | None:
    name = group.name or ""
    arch = next((d.compute_arch for d in group.devices if d.compute_arch), None)
    mem = group.mem_gib_each
    short = name.replace("NVIDIA ", "") or "this GPU"
    if arch == "sm107" or _has(r"rubin|vr200", name):
        return Family(["vr200"], notes=["vr200 is a preview profile: only the nightly image runs on Rubin"])
    if _has(r"\bGB300\b", name):
        return Family(["dgx_station_gb300"] if group.count == 1 else ["gb300"])
    if _has(r"\bGB200\b", name):
        return Family(["gb200"])
    if _has(r"\bGB10\b", name):
        return Family(["dgx_spark_gb10"])
    if _has(r"\bB300\b", name):
        return Family(["b300"])
    if _has(r"\bB200\b", name):
        return Family(["b200"])
    if _has(r"\bGH200\b", name):
        pick = "h200" if mem is None or mem >= 120 else "h100"
        size = "141" if pick == "h200" else "80"
        return Family([pick], nearest=True, notes=[
            f"GH200 (Grace Hopper superchip) has no catalog profile; nearest is {pick} (Hopper, {size} GB class) "
            "which assumes 8 GPUs"])
    if _has(r"\bH200\b", name):
        notes = ["H200 NVL (PCIe) variant: same profile, GPUs linked by NVLink bridges"] if _has("NVL", name) else []
        return Family(["h200"], notes=notes)
    if _has(r"\bH(100|800)\b", name):
        notes = [f"{short} (PCIe/NVL variant): same profile as the SXM part"] if _has(r"NVL|PCIe", name) else []
        return Family(["h100"], notes=notes)
    if _has(r"RTX (PRO )?6000D", name):
        return Family(["rtx_pro_6000", "rtx_pro_6000_2x", "rtx_pro_6000_4x", "rtx_pro_6000_8x"], nearest=True,
                      notes=["RTX PRO 6000D has 84 GB, not the 96 GB the profile assumes"])
    if _has(r"RTX PRO 6000", name):
        return Family(["rtx_pro_6000", "rtx_pro_6000_2x", "rtx_pro_6000_4x", "rtx_pro_6000_8x"])
    if _has(r"RTX PRO 5000", name):
        return Family(["rtx_pro_5000", "rtx_pro_5000_4x"])
    if _has(r"RTX 5090", name):
        notes = ["RTX 5090 D (China variant) - treated as RTX 5090"] if _has(r"5090 D\b", name) else []
        return Family(["rtx_5090", "rtx_5090_2x"], notes=notes)
    if _has(r"RTX 4090", name):
        return Family(["rtx_4090_2x"])
    if _has(r"\bL40S\b", name):
        return Family(["l40s"])
    # Unknown name: nearest by compute capability and memory.
    m = mem or 0
    if arch == "sm90":
        ids = ["h200"] if m >= 120 else ["h100"]
    elif arch == "sm100":
        ids = ["b200"]
    elif arch == "sm103":
        ids = ["b300"]
    elif arch == "sm121":
        ids = ["dgx_spark_gb10"]
    elif arch == "sm120":
        ids = (["rtx_pro_6000", "rtx_pro_6000_2x", "rtx_pro_6000_4x", "rtx_pro_6000_8x"] if m >= 80 else
               ["rtx_pro_5000", "rtx_pro_5000_4x"] if m >= 60 else ["rtx_5090", "rtx_5090_2x"])
    elif arch == "sm89":
        ids = ["l40s"] if m >= 40 else ["rtx_4090_2x"]
    elif arch:
        ids = ["h200"] if m >= 100 else ["h100"] if m >= 60 else ["l40s"] if m >= 40 else ["rtx_4090_2x"]
        return Family(ids, nearest=True, notes=[
            f"{short} ({arch}) has no catalog profile; nearest is {ids[0]}"])
    else:
        return None
    return Family(ids, nearest=True, notes=[f"{short} has no catalog profile; nearest is {ids[0]}"])


def _amd(group: AcceleratorGroup) -> Family | None:
    hint = group.family_hint
    name = (group.name or "").upper()
    for model in ("mi355x", "mi350x", "mi325x", "mi300x"):
        if hint == model or model.upper() in name:
            return Family([model])
    if hint in ("mi308x", "mi300a") or "MI308X" in name or "MI300A" in name:
        part = (hint or name).upper().replace("AMD INSTINCT ", "")
        return Family(["mi300x"], nearest=True, notes=[f"{part} has no catalog profile; nearest is mi300x"])
    arch = next((d.compute_arch for d in group.devices if d.compute_arch), None)
    mem = group.mem_gib_each or 0
    if arch == "gfx942":
        return Family(["mi325x"] if mem >= 224 else ["mi300x"])
    if arch == "gfx950":
        caps = [cap for d in group.devices if (cap := d.details.get("power_cap_w"))]
        if caps:
            return Family(["mi355x"] if caps[0] >= 1200 else ["mi350x"])
        return Family(["mi355x"], notes=["gfx950 variant unknown (MI350X or MI355X); the two profiles are identical"])
    if arch or group.devices:
        pick = "mi355x" if mem >= 250 else "mi325x" if mem >= 224 else "mi300x"
        what = group.name or arch or "this AMD GPU"
        return Family([pick], nearest=True, notes=[f"{what} has no catalog profile; nearest is {pick}"])
    return None


def _intel(group: AcceleratorGroup) -> Family | None:
    ids = {d.pci_device_id for d in group.devices}
    name = group.name or ""
    if "0xe211" in ids or _has(r"Pro B60", name):
        return Family(["arc_pro_b60"])
    if "0xe223" in ids or _has(r"Pro B70", name):
        return Family(["arc_pro_b70"])
    if ids & {"0xe220", "0xe221"}:
        return Family(["arc_pro_b70"], nearest=True, notes=[f"{name} has no catalog profile; nearest is arc_pro_b70"])
    if "0xe212" in ids or _has(r"Pro B50", name):
        return Family(["arc_pro_b60"], nearest=True,
                      notes=["Intel Arc Pro B50 (16 GB) has no catalog profile; nearest is arc_pro_b60"])
    return None


def _huawei(group: AcceleratorGroup) -> Family | None:
    hint = group.family_hint
    if hint == "ascend:910c":
        return Family(["ascend_910c"])
    if hint == "ascend:a2":
        chip = next((n for n in group.flags.get("chip_names", []) if n.upper().startswith("910B")), "910B")
        return Family(["ascend_910c"], nearest=True, notes=[
            f"Atlas A2 ({chip}) is not in the catalog; nearest profile is ascend_910c (A3, 16 NPUs)"])
    if hint == "ascend:950pr":
        return Family(["ascend_950pr", "ascend_950pr_8x"])
    if hint == "ascend:950dt":
        return Family(["ascend_950dt", "ascend_950dt_8x"],
                      notes=["ascend_950dt and ascend_950dt_8x have identical data; either fits"])
    return None


def _google(group: AcceleratorGroup) -> Family | None:
    if group.family_hint == "tpu:v6e":
        return Family(["trillium"])
    if group.family_hint == "tpu:7x":
        return Family(["ironwood"])
    if group.family_hint:
        return Family(["trillium"], nearest=True, notes=[f"{group.name} has no catalog profile; nearest is trillium"])
    return None


def _zhenwu(group: AcceleratorGroup) -> Family | None:
    name = (group.name or "").upper()
    if "810E" in name:
        return Family(["810e"])
    if "M890" in name:
        return Family(["m890"])
    return None


#: Profile-family rule per backend family of the registry (docs/backends.md §13).
IDENTIFIERS = {"cuda": _nvidia, "rocm": _amd, "xpu": _intel, "ascend": _huawei, "tpu": _google, "ppu": _zhenwu}


def identify(group: AcceleratorGroup) -> Family | None:
    """The profile family of an accelerator group (§4.4), or None when no rule applies."""
    fn = IDENTIFIERS.get(backends_registry.accelerator_family(group.brand) or "")
    return fn(group) if fn else None


def _count(profile: Any) -> int:
    return int(getattr(profile, "gpu_count", 0) or 0)


def _order_by_count(ids: list[str], profiles: Mapping[str, Any], n: int) -> list[str]:
    """Family ids ordered per §4.2 step 3: the pick first, then by distance of their count to n."""
    present = [i for i in ids if i in profiles]
    if not present:
        return []
    exact = [i for i in present if _count(profiles[i]) == n]
    below = sorted((i for i in present if _count(profiles[i]) < n), key=lambda i: -_count(profiles[i]))
    above = sorted((i for i in present if _count(profiles[i]) > n), key=lambda i: _count(profiles[i]))
    first = (exact or below or above)[0]
    rest = sorted((i for i in present if i != first),
                  key=lambda i: (abs(_count(profiles[i]) - n), present.index(i)))
    return [first, *rest]


def _candidate(pid: str, profile: Any, group: AcceleratorGroup, family: Family, inv: Inventory) -> Candidate:
    quality, notes = "exact", list(family.notes)
    m, n = _count(profile), group.count
    if m != n:
        quality = "count_mismatch"
        notes.append(f"{n} {group.units(n)} detected; {pid} uses {m} of them" if m < n
                     else f"{n} {group.units(n)} detected; the profile is for {m}")
    mem = group.mem_gib_each
    vram = getattr(profile, "vram_gb", None)
    if mem and vram and m and pid not in NO_MEMORY_CHECK:
        nominal = float(vram) / m
        ratio = mem / nominal
        if not MEMORY_BAND[0] <= ratio <= MEMORY_BAND[1]:
            quality = _worse("nearest", quality)
            notes.append(f"memory per {group.unit} ({mem:.1f} GiB) does not match the profile's {nominal:g} GB")
    if family.nearest:
        quality = _worse("nearest", quality)
    if group.flags.get("grace") or (group.brand == "NVIDIA" and inv.host.arch == "aarch64"):
        notes.append(f"Grace (aarch64) host: IAXL KVShrink is unsupported on {pid}" if pid in IAXL_EXCLUDED
                     else "Grace (aarch64) host: IAXL KVShrink needs an x86 Xeon host")
    if group.pci_only:
        quality = "pci_only"
        if group.access_reason:
            notes.insert(0, group.access_reason)
    return Candidate(pid, quality, notes)


def _cpu_family(cpu: CpuFacts, profiles: Mapping[str, Any]) -> Family | None:
    cpu_ids = [i for i, p in profiles.items() if getattr(p, "generation", None) == "cpu"]
    if not cpu_ids:
        return None
    near = "xeon6" if "xeon6" in cpu_ids else cpu_ids[0]

    def fam(pick: str, nearest: bool, note: str | None = None) -> Family:
        pick = pick if pick in cpu_ids else near
        return Family([pick, *[i for i in cpu_ids if i != pick]], nearest=nearest, notes=[note] if note else [])

    key = (cpu.family or -1, cpu.model or -1)
    if cpu.vendor == "Intel":
        if cpu.is_xeon and key in INTEL_MODELS:
            codename, generation, exact = INTEL_MODELS[key]
            if exact:
                return fam(generation, False)
            if "E-core" in codename:
                short = codename.split(" (")[0]
                return fam(generation, True, f"Xeon 6 E-core ({short}) has no AVX-512 and no AMX; vLLM CPU "
                                             "performance will be far below a P-core Xeon 6")
            if key == (6, 0x8F):
                return fam("xeon5", True, "4th Gen Xeon (Sapphire Rapids) is not in the catalog; xeon5 is the "
                                          "closest profile (same AMX instruction set)")
            return fam(generation, True, f"{codename} is newer than any catalog profile; nearest is {generation}")
        if key == (19, 0x01):
            return fam("xeon6", True, "Diamond Rapids is newer than any catalog profile; nearest is xeon6")
        if cpu.is_xeon:
            return fam("xeon5", True, f"{cpu.model_name} is older than any catalog profile"
                                      f"{'' if cpu.amx else ' (no AMX)'}; nearest is xeon5")
        return fam(near, True, f"{cpu.model_name or 'this Intel CPU'} is a client CPU with no catalog profile; "
                               f"nearest CPU-backend profile is {near}")
    if cpu.vendor in ("AMD", "Arm"):
        return fam(near, True, f"no {cpu.vendor} CPU profile in the catalog; nearest CPU-backend profile is {near}")
    return None


def match_profiles(inv: Inventory, profiles: Mapping[str, Any]) -> list[Candidate]:
    """Ranked candidates for ``inv`` among ``profiles`` (id → profile-like). Never empty.

    The first candidate is the preselection. Returns ``[Candidate(None, "none", [why])]`` when
    nothing could be identified (unknown accelerator and unknown CPU), so the UI asks.
    """
    group = inv.primary
    if group is not None:
        family = identify(group)
        if family is not None:
            ordered = _order_by_count(family.ids, profiles, group.count)
            if ordered:
                return [_candidate(pid, profiles[pid], group, family, inv) for pid in ordered]
            missing = ", ".join(family.ids)
            return [Candidate(None, "none", [f"{group.name or group.brand} maps to {missing}, which the catalog "
                                             "does not contain"])]
        return [Candidate(None, "none", [f"{group.name or group.brand + ' accelerator'} has no catalog profile "
                                         "and no nearest rule; pick a profile by hand"])]
    family = _cpu_family(inv.cpu, profiles)
    if family is None:
        return [Candidate(None, "none", ["no accelerator and an unidentified CPU: pick a profile by hand"])]
    out = []
    for i, pid in enumerate(family.ids):
        quality = "nearest" if family.nearest or i > 0 else "exact"
        out.append(Candidate(pid, quality, list(family.notes) if i == 0 else [f"alternative CPU profile {pid}"]))
    return out
