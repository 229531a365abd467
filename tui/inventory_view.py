"""The hardware screen's "detected" panel text, from detect's Inventory (pure, no Textual).

The inventory is detect's pydantic model (contracts §4; docs/detection.md §4.1 summary and §5
host facts). The panel shows what a person needs to trust the preselection: the primary accelerator
(brand, family, count, memory), the host (CPU, RAM), the probes that did not answer and why, and the
match (profile, quality, notes). Access is tolerant (``field``) so a partial inventory — a probe that
failed — still renders.
"""

from __future__ import annotations

from typing import Any

from vllm_deploy_wizard.common.memory_labels import WHICH_DECIDES, device_list, devices_differ, host_memory
from vllm_deploy_wizard.tui.catalog_view import field


def _fmt_gib(value: Any) -> str:
    try:
        return f"{float(value):.0f} GiB"
    except (TypeError, ValueError):
        return "?"


def inventory_lines(inventory: Any) -> list[str]:
    """Human lines for the detected panel; ``["Detecting…"]`` while ``inventory`` is None.

    Reads detect's Inventory: ``accelerators`` (groups: ``name``, ``count``, ``unit``,
    ``mem_gib_each``, ``interconnect``, ``notes``), ``cpu`` (``model_name``, ``logical_cpus``),
    ``host`` (``ram_bytes``, ``primary_ip``, ``default_iface``, ``fabric``), ``software``
    (``vllm``/``lmcache``/``vllm_router`` tools), ``probes`` (status + reason).
    """
    if inventory is None:
        return ["Detecting accelerators and host facts…"]
    lines: list[str] = []
    groups = field(inventory, "accelerators", default=[]) or []
    for group in groups:
        name = field(group, "name", default=field(group, "brand", default="accelerator"))
        count = field(group, "count", default=0)
        unit = field(group, "unit", default="GPU")
        mem = field(group, "mem_gib_each")
        devices = field(group, "devices", default=[]) or []
        mixed = devices_differ(devices)
        if mixed:  # docs/fit.md §10: per device, never the first device's memory × N
            line = f"mixed {field(group, 'brand', default='')}: {count} {unit}".replace(" :", ":")
        else:
            line = f"{name}: {count} {unit}" + (f", {_fmt_gib(mem)} total each" if mem else "")
        inter = field(group, "interconnect")
        if inter and inter != "none":
            line += f", {inter}"
        lines.append(line)
        if mixed:
            lines.extend(f"  device {d}" for d in device_list(devices))
            lines.append("  pick the devices to run on in the Devices field below")
        lines.extend(f"  {n}" for n in field(group, "notes", default=[]) or [])
    if not groups:
        lines.append("No accelerator found — CPU-only node")
    cpu = field(inventory, "cpu")
    host = field(inventory, "host")
    if cpu is not None or host is not None:
        model = field(cpu, "model_name", default="CPU")
        cores = field(cpu, "logical_cpus")
        ram = field(host, "ram_bytes", default=field(host, "mem_total_bytes"))
        text = f"Host: {model}" + (f", {cores} CPUs" if cores else "")
        lines.append(text)
        if ram:  # the same words as `vllm-wizard detect` (common.memory_labels)
            lines.append("Memory: " + host_memory(ram, field(host, "mem_available_bytes"),
                                                  field(host, "cgroup_limit_bytes")))
            lines.append(f"  ({WHICH_DECIDES})")
        ip, iface = field(host, "primary_ip"), field(host, "default_iface")
        if ip:
            fabric = field(host, "fabric", default="none")
            lines.append(f"Network: {ip}" + (f" on {iface}" if iface else "") + f", fabric {fabric}")
    software = field(inventory, "software")
    if software is not None:
        parts = []
        for key, label in (("vllm", "vLLM"), ("lmcache", "LMCache"), ("vllm_router", "vllm-router")):
            tool = field(software, key)
            if tool is not None:
                installed = field(tool, "installed", default=False)
                version = field(tool, "version", default="") or ""
                parts.append(f"{label} {version}".strip() if installed else f"{label} –")
        if parts:
            lines.append("Software: " + ", ".join(parts))
    probes = field(inventory, "probes", default={}) or {}
    for name, probe in probes.items():
        status = str(field(probe, "status", default=""))
        if status and status not in ("ok", "found", "absent", "not_present"):
            reason = field(probe, "reason", default="")
            lines.append(f"Probe {name}: {status}" + (f" — {reason}" if reason else ""))
    return lines


def match_lines(candidates: list, profiles: Any) -> list[str]:
    """The preselection line(s): best candidate's profile, quality and notes, or why none."""
    if not candidates:
        return []
    best = candidates[0]
    pid = str(field(best, "profile_id", default=""))
    quality = str(field(best, "quality", default="none"))
    if quality == "none" or not pid:
        return ["No hardware profile matches this node — pick one below."]
    name = field(profiles.get(pid) if profiles else None, "display_name", default=pid)
    lines = [f"Preselected: {name} ({pid}) — match: {quality}"]
    lines.extend(f"  {note}" for note in (field(best, "notes", default=[]) or []))
    return lines


def detected_memory_gb(inventory: Any) -> tuple[float, str] | None:
    """The memory a model must fit into on this machine, in GB (10^9 bytes, the recipes' unit), and
    what it is in words: for GPUs the primary group's per-device memory × devices ("8×141 GiB
    detected GPU memory"; mixed GPUs each device's total, "24+12+24 GiB …"); for a CPU-only node
    the host RAM ("24 GiB detected host RAM"). None when
    detection did not report it. On a CPU-only node with NUMA facts it is one NUMA node's memory ×
    the NUMA nodes with CPUs ("1×11 GiB detected NUMA node memory"), what the plan's fit rules use."""
    if inventory is None:
        return None
    groups = field(inventory, "accelerators", default=[]) or []
    if groups:
        each, count = field(groups[0], "mem_gib_each"), field(groups[0], "count", default=0)
        devices = field(groups[0], "devices", default=[]) or []
        if devices_differ(devices):  # mixed GPUs: the sum of each device's total, each named
            sizes = [field(d, "memory_bytes") or 0 for d in devices]
            return sum(sizes) / 1e9, "+".join(f"{b / 2**30:.0f}" for b in sizes) + " GiB detected GPU memory"
        if not each or not count:
            return None
        return float(each) * int(count) * 2**30 / 1e9, f"{count}×{float(each):.0f} GiB detected GPU memory"
    nodes = [n for n in (field(inventory, "host", "numa_nodes", default=None) or [])
             if (field(n, "cpus", default=0) or 0) > 0 and field(n, "mem_bytes")]
    if nodes:  # vLLM CPU binds each rank to one NUMA node (docs/catalog.md §5)
        each = min(float(field(n, "mem_bytes")) for n in nodes)
        return each * len(nodes) / 1e9, f"{len(nodes)}×{each / 2**30:.0f} GiB detected NUMA node memory"
    ram = field(inventory, "host", "ram_bytes") or field(inventory, "host", "mem_total_bytes")
    if not ram:
        return None
    return float(ram) / 1e9, f"{float(ram) / 2**30:.0f} GiB detected host RAM"


def detected_node_size(inventory: Any) -> str | None:
    """What this node has, in the hardware list's words: ``"1 dev, 16 GiB/node"`` (GiB: measured) — the
    devices per node a plan for it is sized with
    (:func:`vllm_deploy_wizard.workflows.planning.detected_device_count`) and the memory a model must
    fit into (:func:`detected_memory_gb`, in GiB). None when detection reported neither."""
    from vllm_deploy_wizard.common.memory_labels import node_memory
    from vllm_deploy_wizard.workflows.planning import detected_device_count

    count = detected_device_count(inventory)
    memory = detected_memory_gb(inventory)
    parts = ([f"{count} dev"] if count else []) + ([node_memory(memory[0])] if memory else [])
    return ", ".join(parts) or None
