"""Huawei Ascend NPUs from PCI, /dev/davinci* and ``npu-smi info``, docs/detection.md §3.5.

Count = dies (logical NPUs): on an Atlas 800 A3 every NPU id has two chip rows named
``Ascend910`` (16 dies on 8 modules). A3/910C is recognised by PCI id 0xd803 or by those two chip
rows per NPU id — never by a ``910B*`` chip name, which is an A2 part. ``npu-smi`` runs with a
timeout (it can hang on sick devices); DCMI (``libdcmi.so``) is not bound here.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from vllm_deploy_wizard.detect.context import ProbeContext
from vllm_deploy_wizard.detect.inventory import AcceleratorGroup, Device, ProbeResult
from vllm_deploy_wizard.detect.pci import HUAWEI

ASCEND_DEV_NODES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")
_PAIR = re.compile(r"(\d+)\s*/\s*(\d+)")


@dataclass
class NpuChip:
    """One chip row of ``npu-smi info``: NPU id, chip id, physical id, name, bus id, HBM MB."""

    npu: int
    chip: int
    phy_id: int
    name: str
    bus_id: str | None
    hbm_mb: int | None


def parse_npu_smi_info(text: str) -> list[NpuChip]:
    """Parse the ``npu-smi info`` table into chip rows (each paired with its NPU header row).

    A header row is ``| <npu> <name> | <health> | …``, a chip row ``| <chip> <phy-id> | <bus-id> |
    … <used> / <total>`` where the last pair is HBM usage in MB. Process tables are ignored.
    """
    chips: list[NpuChip] = []
    header: tuple[int, str] | None = None
    for line in text.splitlines():
        if "Process id" in line or "Process name" in line:
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3:
            continue
        first = cells[0].split()
        if len(first) != 2 or not first[0].isdigit():
            continue
        if not first[1].isdigit():
            header = (int(first[0]), first[1])
        elif header is not None:
            pairs = _PAIR.findall(cells[2])
            chips.append(NpuChip(npu=header[0], chip=int(first[0]), phy_id=int(first[1]), name=header[1],
                                 bus_id=cells[1].lower() or None,
                                 hbm_mb=int(pairs[-1][1]) if pairs else None))
    return chips


def parse_npu_smi_mapping(text: str) -> dict[tuple[int, int], dict[str, int]]:
    """``npu-smi info -m`` → ``{(npu id, chip id): {"logic_id": …[, "slot_id": …, "phy_id": …]}}``.

    Columns are found by their header names (``NPU ID``, ``Chip ID``, ``Chip Logic ID``, and on 950
    ``Slot ID`` / ``Chip Phy-ID``); rows without a logic id (``-``, the ``Mcu``) are skipped.
    ``ASCEND_RT_VISIBLE_DEVICES`` takes these logic ids (docs/detection.md §3.5).
    """
    names = {"npu id": "npu", "chip id": "chip", "chip logic id": "logic_id", "slot id": "slot_id",
             "chip phy-id": "phy_id"}
    columns: list[str] = []
    out: dict[tuple[int, int], dict[str, int]] = {}
    for line in text.splitlines():
        if "Logic ID" in line:
            header = re.split(r"\s{2,}", line.strip())
            columns = [names.get(h.strip().lower(), h.strip().lower()) for h in header]
            continue
        if not columns:
            continue
        values = line.split()
        if len(values) < len(columns) - 1:
            continue
        row = dict(zip(columns, values, strict=False))  # a row may lack the last column (checked above)
        try:
            key = (int(row["npu"]), int(row["chip"]))
            logic = int(row["logic_id"])
        except (KeyError, ValueError):
            continue
        entry = {"logic_id": logic}
        for extra in ("slot_id", "phy_id"):
            if str(row.get(extra, "")).isdigit():
                entry[extra] = int(row[extra])
        out[key] = entry
    return out


def family_of(chips: list[NpuChip], pci_ids: set[str]) -> str | None:
    """``ascend:910c`` | ``ascend:a2`` | ``ascend:950pr`` | ``ascend:950dt`` | ``ascend:310p`` | None."""
    names = {c.name.lower() for c in chips}
    per_npu = Counter(c.npu for c in chips if c.name.lower() == "ascend910")
    if any("950pr" in n for n in names):
        return "ascend:950pr"
    if any("950dt" in n for n in names):
        return "ascend:950dt"
    if "0xd803" in pci_ids or (per_npu and min(per_npu.values()) >= 2):
        return "ascend:910c"
    if "0xd802" in pci_ids or any(n.startswith("910b") for n in names):
        return "ascend:a2"
    if "0xd500" in pci_ids or any("310p" in n for n in names):
        return "ascend:310p"
    return None


def probe(ctx: ProbeContext) -> tuple[ProbeResult, AcceleratorGroup | None]:
    """Detect Ascend NPUs. Never raises."""
    on_pci = ctx.by_vendor.get(HUAWEI, [])
    chips: list[NpuChip] = []
    smi_state = "not on PATH"
    if ctx.facts.which("npu-smi"):
        result = ctx.facts.run(["npu-smi", "info"])
        if result is None or result.timed_out:
            smi_state = "timed out"
        elif result.ok:
            chips = parse_npu_smi_info(result.stdout)
            smi_state = "ok"
        else:
            smi_state = f"exit {result.returncode}"
    if not on_pci and not chips:
        return ProbeResult("absent", "no Ascend NPU on the PCI bus"), None
    pci_by_bus = {fn.bdf: fn for fn in on_pci}
    if chips:
        devices = [Device(brand="Huawei", kind="npu", index=i, name=c.name,
                          pci_device_id=pci_by_bus[c.bus_id].device if c.bus_id in pci_by_bus else None,
                          bdf=c.bus_id, memory_bytes=c.hbm_mb << 20 if c.hbm_mb else None,
                          memory_source="npu-smi" if c.hbm_mb else None, source="npu-smi",
                          details={"npu_id": c.npu, "chip_id": c.chip, "phy_id": c.phy_id})
                   for i, c in enumerate(chips)]
        mapping = ctx.facts.run(["npu-smi", "info", "-m"])
        ids = parse_npu_smi_mapping(mapping.stdout) if mapping is not None and mapping.ok else {}
        for dev in devices:
            dev.details.update(ids.get((dev.details["npu_id"], dev.details["chip_id"]), {}))
    else:
        devices = [Device(brand="Huawei", kind="npu", index=i, name=fn.name, pci_device_id=fn.device,
                          bdf=fn.bdf, numa_node=fn.numa_node, source="pci") for i, fn in enumerate(on_pci)]
    family = family_of(chips, {fn.device for fn in on_pci})
    group = AcceleratorGroup(brand="Huawei", kind="npu", probe="ascend", devices=devices, count=len(devices),
                             unit="NPU", family_hint=family,
                             interconnect="hccs" if family == "ascend:910c" else "pcie")
    if chips:
        group.flags["chip_names"] = sorted({c.name for c in chips})
    driver = ctx.facts.read_text("/usr/local/Ascend/driver/version.info")
    if driver:
        group.flags["driver"] = driver.partition("=")[2].strip() or driver
    missing = [p for p in ASCEND_DEV_NODES if not ctx.has_dev(p)]
    if not ctx.has_dev("/dev/davinci") or (ctx.in_container and missing):
        if ctx.in_container:
            why = ("Ascend NPUs exist on the host but /dev/davinci*, /dev/davinci_manager, /dev/devmm_svm, "
                   "/dev/hisi_hdc and the driver directory are not mounted")
        else:
            why = "Ascend NPUs present on the PCI bus but /dev/davinci* is missing (NPU driver not loaded?)"
        group.pci_only, group.access_reason = True, why
        group.notes.append(why)
        return ProbeResult("unavailable", why), group
    for dev in devices:  # the device file docker passes for this die (named by its physical id)
        phy = dev.details.get("phy_id")
        if phy is not None and ctx.has_dev(f"/dev/davinci{phy}"):
            dev.details["dev_node"] = f"/dev/davinci{phy}"
    gaps = [d for d in devices if d.details.get("dev_node") and d.details["dev_node"] != f"/dev/davinci{d.index}"]
    if gaps:
        nodes = ", ".join(d.details["dev_node"] for d in devices if d.details.get("dev_node"))
        group.notes.append(f"NPU physical ids skip a slot: the device files are {nodes}; the plan passes those to "
                           "docker and pins ASCEND_RT_VISIBLE_DEVICES with the logic ids 0.."
                           f"{len(devices) - 1}")
    odd = [d for d in devices if d.details.get("logic_id") is not None and d.details["logic_id"] != d.index]
    if odd:
        pairs = ", ".join(f"die {d.index} = logic id {d.details['logic_id']}" for d in odd)
        group.notes.append("ASCEND_RT_VISIBLE_DEVICES takes logic ids, which differ from the npu-smi order here: "
                           f"{pairs}")
    if not chips:
        reason = f"npu-smi {smi_state}: identified from the PCI bus only"
        group.notes.append(reason)
        return ProbeResult("degraded", reason), group
    return ProbeResult("ok", f"npu-smi: {len(chips)} NPU die(s) on {len({c.npu for c in chips})} NPU id(s)"), group
