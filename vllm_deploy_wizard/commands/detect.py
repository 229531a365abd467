"""``vllm-wizard detect``: what this node has and which hardware profile fits.

``detect`` prints a readable summary (devices, host, software, probes, preselected profile with
notes); ``--json`` the full inventory plus ranked candidates; ``--capture FILE`` writes the raw
facts in the fixture schema (UUIDs, serials, hostnames redacted) for a bug report; ``--replay
FILE [--scenario ID]`` runs detection and matching on captured facts instead of this machine.
Profiles come from the bundled catalog, or from ``--recipes DIR`` (a recipes checkout).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.commands import add_recipes_flag


def register(subparsers: Any) -> None:
    """Add the ``detect`` sub-command."""
    parser = subparsers.add_parser(
        "detect", help="detect accelerators and host facts; preselect a hardware profile",
        description="Detect this node's accelerators, CPU, memory, network and software, and preselect "
                    "the matching hardware profile of the vLLM recipes taxonomy, saying why.")
    parser.add_argument("--json", action="store_true", help="print the full inventory and candidates as JSON")
    parser.add_argument("--capture", metavar="FILE", type=Path,
                        help="write the raw facts in the fixture schema (redacted) to FILE")
    parser.add_argument("--replay", metavar="FILE", type=Path,
                        help="detect from a captured fixture FILE instead of this machine")
    parser.add_argument("--scenario", metavar="ID", help="scenario id inside a scenario file (failure_modes.yaml)")
    add_recipes_flag(parser)
    parser.set_defaults(handler=handle)


def _gib(value: int | None) -> str:
    return f"{value / 2**30:.1f} GiB" if value else "?"


def render(inv: Any, candidates: list[Any], profiles: Any, colour: bool = False) -> str:
    """The human summary of ``detect`` (one fact per line; probe statuses coloured with ``colour``)."""
    from vllm_deploy_wizard.common import tables
    from vllm_deploy_wizard.common.memory_labels import WHICH_DECIDES, device_list, devices_differ, host_memory
    from vllm_deploy_wizard.detect.partitions import vllm_view

    lines = []
    best = candidates[0] if candidates else None
    if best is not None and best.profile_id:
        name = getattr(profiles.get(best.profile_id), "display_name", best.profile_id)
        lines.append(f"Profile: {best.profile_id} ({name}) - match {best.quality}")
    else:
        lines.append("Profile: none matched - pick one in the wizard or with plan --hardware")
    lines += [f"  note: {n}" for n in (best.notes if best else [])]
    if len(candidates) > 1:
        lines.append("  alternatives: " + ", ".join(f"{c.profile_id} ({c.quality})" for c in candidates[1:4]))
    lines.append("")
    if inv.accelerators:
        for group in inv.accelerators:
            vis = f", this shell sees {group.visible}" if group.visible is not None else ""
            mixed = devices_differ(group.devices)
            mem = f", {group.mem_gib_each:.1f} GiB total each" if group.mem_gib_each and not mixed else ""
            arch = "/".join(sorted({d.compute_arch for d in group.devices if d.compute_arch}))
            what = f"mixed {group.brand} {group.units()}" if mixed else (group.name or group.brand)
            lines.append(f"Accelerators: {group.count} x {what}{mem}"
                         f"{f', {arch}' if arch else ''}, {group.interconnect}{vis}"
                         f"{' [PCI only]' if group.pci_only else ''}")
            if mixed:  # per device: the first device's memory × N would be wrong (docs/fit.md §10)
                lines += [f"  device {line}" for line in device_list(group.devices)]
                lines.append("  pick devices with `plan --devices I,J` (pinned with CUDA_DEVICE_ORDER=PCI_BUS_ID)")
            lines += [f"  note: {n}" for n in group.notes]
            view = vllm_view(group)
            if view.reason:
                each = f", {_gib(view.memory_bytes_each)} total each" if view.memory_bytes_each else ""
                lines.append(f"  vLLM sees: {view.devices} devices{each} - {view.reason}")
    else:
        lines.append("Accelerators: none - CPU-only node")
    cpu = inv.cpu
    isa = ", ".join(x for x in ("AMX" if cpu.amx else "", "AVX-512" if cpu.avx512 else "") if x) or "no AMX/AVX-512"
    arch = cpu.microarch or cpu.vendor or "?"
    model = cpu.model_name if cpu.model_name and cpu.model_name != arch else None
    lines.append(f"CPU: {model + ' (' + arch + ')' if model else arch}, "
                 f"{cpu.logical_cpus or '?'} CPUs ({cpu.usable_cpus or '?'} usable), "
                 f"{cpu.sockets or '?'} socket(s), {isa}")
    if cpu.qat_pfs or cpu.dsa or cpu.iaa:
        lines.append(f"  offload engines: {cpu.qat_pfs} QAT PF, {cpu.dsa} DSA, {cpu.iaa} IAA")
    lines += [f"  note: {n}" for n in cpu.notes]
    host = inv.host
    numa = ", ".join(f"node{n.id}: {n.cpus} CPUs {_gib(n.mem_bytes)}" for n in host.numa_nodes) or "unknown"
    lines.append(f"Memory: {host_memory(host.ram_bytes, host.mem_available_bytes, host.cgroup_limit_bytes)}")
    lines.append(f"  ({WHICH_DECIDES})")
    lines.append(f"NUMA: {host.numa_nodes_with_cpus} node(s) with CPUs ({numa})")
    if host.shm_total_bytes:
        shm_free = _gib(host.shm_free_bytes) if host.shm_free_bytes != 0 else "0 GiB"
        lines.append(f"Shared memory: /dev/shm {shm_free} free of {_gib(host.shm_total_bytes)}")
    lines.append(f"Network: fabric {host.fabric}; HEAD_IP default {host.primary_ip or '?'}, "
                 f"IFACE_NAME default {host.default_iface or '?'}")
    for disk in host.disks:
        lines.append(f"Disk: {disk.path} {_gib(disk.free_bytes)} free of {_gib(disk.total_bytes)}"
                     f" ({disk.fs_type or '?'}{', shared' if disk.shared else ''})")
    if host.in_container:
        lines.append(f"Container: yes ({', '.join(host.container_hints)})")
    lines += [f"  note: {n}" for n in host.notes]
    sw = inv.software

    def tool(label: str, t: Any) -> str:
        return f"{label} {t.version or '(version unknown)'}" if t.installed else f"{label} -"

    lines.append("Software: " + ", ".join([tool("vllm", sw.vllm), tool("lmcache", sw.lmcache),
                                            tool("vllm-router", sw.vllm_router), tool("docker", sw.docker)]))
    lines += [f"  note: {n}" for n in sw.notes + inv.notes]
    lines.append("")
    lines.append("Probes:")
    lines += tables.render([[name, p.status, p.reason] for name, p in inv.probes.items()], colour=colour).splitlines()
    lines.append(f"(detected from {inv.source} in {inv.elapsed_ms:.0f} ms)")
    return "\n".join(lines)


def handle(args: argparse.Namespace) -> int:
    """Handler: detect (or replay), match, print; write a capture when asked."""
    from dataclasses import asdict

    from vllm_deploy_wizard.catalog import load_catalog
    from vllm_deploy_wizard.common.errors import DetectionError
    from vllm_deploy_wizard.detect import detect, match_profiles
    from vllm_deploy_wizard.detect.facts import LiveFacts
    from vllm_deploy_wizard.detect.fixture import FixtureFacts
    from vllm_deploy_wizard.detect.fixture_capture import capture
    from vllm_deploy_wizard.detect.partitions import vllm_view

    if args.scenario and not args.replay:
        raise DetectionError("--scenario needs --replay FILE")
    facts = FixtureFacts.load(args.replay, args.scenario) if args.replay else LiveFacts()
    if args.capture:
        import yaml

        try:
            args.capture.write_text(yaml.safe_dump(capture(facts), sort_keys=False, width=120))
        except OSError as exc:
            raise DetectionError(f"--capture {args.capture}: cannot write ({exc.strerror})") from None
        print(f"wrote raw facts to {args.capture} (UUIDs, serials and hostnames redacted)", file=sys.stderr)
    inv = detect(facts)
    catalog = load_catalog(recipes=args.recipes) if args.recipes else load_catalog()
    profiles = catalog.taxonomy.hardware_profiles
    candidates = match_profiles(inv, profiles)
    if args.json:
        out = {"inventory": inv.to_dict(), "candidates": [c.to_dict() for c in candidates],
               "profile": candidates[0].profile_id, "match": candidates[0].quality,
               "device_count": inv.device_count,
               "vllm_view": asdict(vllm_view(inv.primary)) if inv.primary else None}
        print(json.dumps(out, indent=2, default=str))
    else:
        from vllm_deploy_wizard.common.tables import colour_for

        print(render(inv, candidates, profiles, colour=colour_for(sys.stdout)))
    return 0
