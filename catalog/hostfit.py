"""Does a plan fit the node it is planned on? Host RAM and CPUs against what the plan pins.

The recipes builder renders one command per selection whatever the node: the LMCache companion asks
for ``--l1-size-gb 512`` and ``--max-cpu-workers 8`` (taxonomy ``kv_offload.lmcache.companion``),
Simple offload for ``cpu_bytes_to_use_per_rank`` 220 GiB per GPU rank and the OffloadingConnector
CPU tier for ``cpu_bytes_to_use`` 512 GiB in total. The golden corpus pins those command texts, so
synthesis keeps them; when the caller knows the host (``plan --detect`` / ``--replay``, the TUI's
detected inventory) :func:`host_fit_warnings` adds plan warnings that say, with a concrete number,
what to lower. docs/detection.md §5.1 asks for exactly this: "report min(host RAM, cgroup limit) as
usable for offload and warn when the limit is below the option's default". The planner first lowers
the builder's own sizes to the node (:mod:`.host_sizing`, docs/fit.md §9), so on a detected node these
warnings are left for the values the person gave.

Decisions:

* **Pure, after synthesis.** The catalog never imports detect (``.importlinter``), so the
  host arrives as a :class:`HostCapacity` of plain numbers; :meth:`HostCapacity.from_inventory`
  reads a ``vllm_deploy_wizard.detect`` inventory by attribute (duck-typed, no import). A plan made without
  host facts gets no such warnings — ``plan`` without ``--detect`` plans for the profile, not a node.
* **Usable RAM** = min(host RAM for KV offload, cgroup limit) (docs/detection.md §5.1). The node this
  runs on stands for every node of the plan (clusters are homogeneous in every profile).
* **How much of it an L1 / CPU tier may take**: the recipe's own rule, "size --l1-size-gb to ~75 %
  of the host DRAM you can dedicate" (taxonomy comment; docs/detection.md §5.1), on accelerator nodes;
  half on CPU profiles (``gen: cpu``), where vLLM's own KV cache lives in the same RAM
  (``VLLM_CPU_KVCACHE_SPACE``, default half the RAM, docs/detection.md §3.4). The suggested value
  is that share, floored to whole GiB, and never above the RAM free right now (``launch`` preflight refuses an
  ``--l1-size-gb`` above free RAM, launcher/preflight.py).
* **Units**: ``--l1-size-gb`` is read as GiB, as the launcher's preflight reads it; connector byte
  counts are bytes.
* **Ranks on a node** (Simple's per-rank knob): the serve process's TP × PP × DP / ``--nnodes``, or
  TP × ``--data-parallel-size-local`` when given (docs/synthesis.md §2.6 shapes).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from vllm_deploy_wizard.common.flags import last_flag_value
from vllm_deploy_wizard.common.numa import rank_numa_node
from vllm_deploy_wizard.common.parallelism import devices_on_node

from .loader import Catalog
from .plan import LaunchPlan, PlanProcess

GIB = 2**30
#: Share of usable RAM an L1 / CPU KV tier may pin on accelerator nodes (taxonomy lmcache comment).
ACCELERATOR_NODE_SHARE = 0.75
#: The same on CPU profiles, where vLLM's KV cache takes RAM too.
CPU_NODE_SHARE = 0.5
#: The LMCache companion's process name (docs/plan-file.md §3.2: ``kv_offload:<key>``).
LMCACHE_PROCESS = "kv_offload:lmcache"

_SERVE_ROLES = ("serve", "head", "worker", "prefill", "decode")


@dataclass(frozen=True)
class HostCapacity:
    """What the node offers, all optional (None = unknown, nothing is checked against it).

    ``ram_bytes``: host RAM for KV offload (docs/detection.md §5.1: NUMA nodes with CPUs, else MemTotal);
    ``available_bytes``: MemAvailable now; ``cgroup_limit_bytes``: container memory limit;
    ``cpus``: CPUs this process may run on (affinity), else logical CPUs;
    ``numa_nodes``: NUMA nodes that have CPUs — the device count of a CPU backend (vLLM CPU binds
    one engine rank per NUMA node); ``numa_node_bytes``: memory of the smallest such node, what
    one rank can use for weights and KV cache (docs/catalog.md §5).
    """

    ram_bytes: int | None = None
    available_bytes: int | None = None
    cgroup_limit_bytes: int | None = None
    cpus: int | None = None
    numa_cpus: tuple[tuple[int, ...], ...] | None = None
    """CPU ids of each NUMA node that has CPUs, in node order (memory-only HBM nodes left out)."""
    numa_free_bytes: tuple[int, ...] | None = None
    """Free memory (``MemFree``) of the same NUMA nodes, bytes."""
    preload_libraries: tuple[str, ...] | None = None
    """TCMalloc / Intel OpenMP libraries found on the host, in ``LD_PRELOAD`` order."""
    numa_nodes: int | None = None
    """NUMA nodes that have CPUs (vLLM CPU binds one rank per node)."""
    numa_node_bytes: int | None = None
    """Total memory of the smallest such NUMA node, bytes."""
    amx: bool | None = None
    """CPU has AMX tiles (``amx_tile``): vLLM's CPU MLA backend then keeps block size 128 (docs/fit.md §3)."""
    devices: tuple[dict[str, Any], ...] | None = None
    """The primary accelerator group's devices in vLLM's order (docs/fit.md §10), each
    ``{"index", "name", "memory_bytes", "visible_id", "dev_node"}``: ``visible_id`` is what the
    backend's visibility variable takes (Ascend: the npu-smi logic id), ``dev_node`` the device file
    docker passes (Ascend: ``/dev/davinci<phy-id>`` when it exists, detect/ascend.py); None for a CPU
    node, a partitioned or MIG group (:func:`.detect.partitions.vllm_view` describes those) or one
    seen on PCI only."""

    @property
    def usable_bytes(self) -> int | None:
        """min(RAM, cgroup limit), the RAM an offload tier can use (docs/detection.md §5.1); None if unknown."""
        known = [b for b in (self.ram_bytes, self.cgroup_limit_bytes) if b]
        return min(known) if known else None

    @classmethod
    def from_inventory(cls, inventory: Any) -> HostCapacity:
        """From a ``vllm_deploy_wizard.detect`` Inventory (read by attribute: ``host.ram_bytes`` else
        ``host.mem_total_bytes``, ``host.mem_available_bytes``, ``host.cgroup_limit_bytes``,
        ``cpu.usable_cpus`` else ``cpu.logical_cpus``). Missing attributes read as unknown."""
        host = getattr(inventory, "host", None)
        cpu = getattr(inventory, "cpu", None)
        nodes = [n for n in getattr(host, "numa_nodes", None) or [] if getattr(n, "cpus", 0)]
        numa_cpus = tuple(tuple(parse_cpu_list(getattr(n, "cpulist", "") or "")) for n in nodes)
        free = [getattr(n, "free_bytes", None) for n in nodes]
        libs = getattr(host, "preload_libraries", None)
        rank_node = rank_numa_node(nodes)
        return cls(
            ram_bytes=getattr(host, "ram_bytes", None) or getattr(host, "mem_total_bytes", None),
            available_bytes=getattr(host, "mem_available_bytes", None),
            cgroup_limit_bytes=getattr(host, "cgroup_limit_bytes", None),
            cpus=getattr(cpu, "usable_cpus", None) or getattr(cpu, "logical_cpus", None),
            numa_cpus=numa_cpus if numa_cpus and all(numa_cpus) else None,
            numa_free_bytes=tuple(int(f) for f in free if f) if free and all(f for f in free) else None,
            preload_libraries=tuple(libs) if libs else None,
            numa_nodes=len(nodes) or getattr(host, "numa_nodes_with_cpus", None) or None,
            numa_node_bytes=getattr(rank_node, "mem_bytes", None) or None,
            amx=getattr(cpu, "amx", None),
            devices=_devices_of(getattr(inventory, "primary", None)),
        )


def _devices_of(group: Any) -> tuple[dict[str, Any], ...] | None:
    """:attr:`HostCapacity.devices` of a detect AcceleratorGroup (read by attribute), or None."""
    if group is None or getattr(group, "pci_only", False):
        return None
    flags = getattr(group, "flags", None) or {}
    if flags.get("mig") or flags.get("partitioned") or getattr(group, "unit", "") == "TensorCore" or any(
            int((getattr(d, "details", None) or {}).get("tiles") or 1) > 1 for d in group.devices):
        return None
    out = []
    for d in getattr(group, "devices", None) or []:
        details = getattr(d, "details", None) or {}
        out.append({"index": d.index, "name": d.name, "memory_bytes": d.memory_bytes,
                    "visible_id": details.get("logic_id", d.index), "dev_node": details.get("dev_node")})
    return tuple(out) or None


def parse_cpu_list(text: str) -> list[int]:
    """The kernel's cpulist format ``"0-3,8,10-11"`` → ``[0, 1, 2, 3, 8, 10, 11]``; bad pieces are
    skipped (an unreadable list reads as no CPUs)."""
    out: list[int] = []
    for piece in text.strip().split(","):
        lo, _, hi = piece.strip().partition("-")
        try:
            first, last = int(lo), int(hi) if hi else int(lo)
        except ValueError:
            continue
        out.extend(range(first, last + 1))
    return out


def host_fit_warnings(cat: Catalog, plan: LaunchPlan, host: HostCapacity) -> list[str]:
    """``warning: …`` lines (contracts §2 ``notes``) for what ``plan`` asks of ``host`` beyond it:

    * the LMCache companion's ``--l1-size-gb`` above the usable share of RAM (or the RAM free now),
      with a suggested size N GiB (and ``--l1-init-size-gb`` when that is above N);
    * its ``--max-cpu-workers`` above the node's CPUs;
    * a serve process's ``--kv-transfer-config`` CPU tier (SimpleCPUOffloadConnector
      ``cpu_bytes_to_use_per_rank`` × ranks on the node, OffloadingConnector ``cpu_bytes_to_use`` /
      ``--nnodes``) above that share, with a suggested byte count.

    Each problem is reported once (the first process showing it). ``cat`` tells whether the plan's
    hardware profile is a CPU (``gen: cpu``). Returns ``[]`` when nothing is known about the host.
    """
    usable = host.usable_bytes
    profile = cat.taxonomy.hardware_profiles.get(str(plan.resolved.get("hardware") or ""))
    cpu_node = profile is not None and profile.gen == "cpu"
    share = CPU_NODE_SHARE if cpu_node else ACCELERATOR_NODE_SHARE
    out: list[str] = []
    seen: set[str] = set()
    for proc in plan.processes:
        lines: list[str] = []
        if proc.name.startswith(LMCACHE_PROCESS):
            lines += _lmcache_warnings(proc, host, usable, share, cpu_node)
        elif proc.role in _SERVE_ROLES:
            line = _connector_warning(proc, host, usable, share, cpu_node)
            lines += [line] if line else []
        for line in lines:
            key = line.split(":", 1)[0]
            if key not in seen:
                seen.add(key)
                out.append("warning: " + line)
    return out


def suggested_gib(host: HostCapacity, share: float) -> int | None:
    """Whole GiB an offload tier may take on ``host``: floor(``share`` × usable RAM), at most the RAM
    free now; None when the usable RAM is unknown."""
    usable = host.usable_bytes
    if not usable:
        return None
    limit = share * usable
    if host.available_bytes:
        limit = min(limit, host.available_bytes)
    return int(math.floor(limit / GIB))


def _gib(n_bytes: float) -> str:
    """GiB in the words of every screen (:mod:`vllm_deploy_wizard.common.memory_labels`)."""
    from vllm_deploy_wizard.common.memory_labels import gib

    return gib(n_bytes)


def _why(asked: float, host: HostCapacity, usable: int, share: float, cpu_node: bool) -> str | None:
    """Why ``asked`` bytes of pinned RAM don't fit (None = they do): above the RAM, above the RAM
    free now, or above the share of it the tier may take."""
    if asked > usable:
        return f"exceeds this node's RAM ({_gib(usable)} usable for offload)"
    if host.available_bytes and asked > host.available_bytes:
        return (f"exceeds the RAM available on this node now ({_gib(host.available_bytes)} available of "
                f"{_gib(usable)} usable for offload)")
    if asked > share * usable:
        where = "a CPU node, where vLLM's KV cache shares the RAM" if cpu_node else "pinned memory can't be swapped"
        return f"is more than {share:.0%} of this node's RAM ({_gib(usable)}; {where})"
    return None


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:  # a $PLACEHOLDER or a typo: launch preflight names it
        return None


def _lmcache_warnings(proc: PlanProcess, host: HostCapacity, usable: int | None, share: float,
                      cpu_node: bool) -> list[str]:
    """L1 size and CPU workers of the LMCache server against ``host``."""
    out = []
    l1 = _number(last_flag_value(proc.argv, "--l1-size-gb"))
    why = _why(l1 * GIB, host, usable, share, cpu_node) if l1 is not None and usable else None
    if why:
        n = suggested_gib(host, share) or 0
        if n >= 1:
            init = _number(last_flag_value(proc.argv, "--l1-init-size-gb"))
            also = f" and --l1-init-size-gb at most {n}" if init is not None and init > n else ""
            how = "below the available RAM, e.g." if why.startswith("exceeds") else "to at most"
            fix = (f"set --l1-size-gb {how} {n}{also} (`plan --l1-size-gb {n}`, or the {proc.name} process "
                   "of the plan file; launch refuses an L1 above the available RAM)")
        else:
            fix = "this node has no RAM to spare for an LMCache L1 pool; plan without --kv-offload lmcache"
        out.append(f"LMCache L1 size {l1:g} GiB (--l1-size-gb) {why}: {fix}")
    workers = _number(last_flag_value(proc.argv, "--max-cpu-workers"))
    if workers is not None and host.cpus and workers > host.cpus:
        out.append(f"LMCache --max-cpu-workers {workers:g} is more than this node's {host.cpus} CPUs: "
                   f"set it to at most {host.cpus} (`plan --max-cpu-workers {host.cpus}`, or the {proc.name} "
                   "process of the plan file)")
    return out


def companion_fixes(cat: Catalog, plan: LaunchPlan, host: HostCapacity) -> dict[str, int]:
    """``Selection.companion_args`` values that make the LMCache companion fit ``host``: the
    ``l1_size_gb`` and ``max_cpu_workers`` its host-fit warnings suggest (empty when it fits or the
    plan has no LMCache server). The wizard offers them as a one-key fix."""
    usable = host.usable_bytes
    profile = cat.taxonomy.hardware_profiles.get(str(plan.resolved.get("hardware") or ""))
    cpu_node = profile is not None and profile.gen == "cpu"
    share = CPU_NODE_SHARE if cpu_node else ACCELERATOR_NODE_SHARE
    fixes: dict[str, int] = {}
    for proc in plan.processes:
        if not proc.name.startswith(LMCACHE_PROCESS):
            continue
        l1 = _number(last_flag_value(proc.argv, "--l1-size-gb"))
        if l1 is not None and usable and _why(l1 * GIB, host, usable, share, cpu_node):
            n = suggested_gib(host, share) or 0
            if n >= 1:
                fixes["l1_size_gb"] = n
        workers = _number(last_flag_value(proc.argv, "--max-cpu-workers"))
        if workers is not None and host.cpus and workers > host.cpus:
            fixes["max_cpu_workers"] = host.cpus
    return fixes


def _connector_warning(proc: PlanProcess, host: HostCapacity, usable: int | None, share: float,
                       cpu_node: bool) -> str | None:
    """The CPU tier of a serve process's ``--kv-transfer-config`` against ``host`` (one line or None)."""
    text = last_flag_value(proc.argv, "--kv-transfer-config")
    if not text or not usable:
        return None
    try:
        config = json.loads(text)
    except ValueError:
        return None
    extra = config.get("kv_connector_extra_config") if isinstance(config, dict) else None
    if not isinstance(extra, dict):
        return None
    connector = config.get("kv_connector")
    n = suggested_gib(host, share) or 0
    if connector == "SimpleCPUOffloadConnector" and isinstance(extra.get("cpu_bytes_to_use_per_rank"), (int, float)):
        ranks = devices_on_node(proc.argv) or 1
        asked = extra["cpu_bytes_to_use_per_rank"] * ranks
        key, per = "cpu_bytes_to_use_per_rank", max(1, n // ranks)
        what = f"{_gib(extra['cpu_bytes_to_use_per_rank'])} per rank × {ranks} rank{'s' if ranks > 1 else ''}"
    elif connector == "OffloadingConnector" and isinstance(extra.get("cpu_bytes_to_use"), (int, float)):
        nodes = int(_number(last_flag_value(proc.argv, "--nnodes")) or 1)
        asked = extra["cpu_bytes_to_use"] / max(1, nodes)
        key, per = "cpu_bytes_to_use", n * max(1, nodes)
        what = f"{_gib(extra['cpu_bytes_to_use'])}" + (f" over {nodes} nodes" if nodes > 1 else "")
    else:
        return None
    why = _why(asked, host, usable, share, cpu_node)
    if not why:
        return None
    if n < 1:
        fix = "this node has no RAM to spare for a CPU KV tier; plan without --kv-offload"
    else:
        fix = (f"lower {key} in --kv-transfer-config, e.g. {per * GIB} ({per} GiB), with "
               "--arg=--kv-transfer-config=<the JSON with that value> (the last one wins)")
    return f"KV offload CPU tier {connector} {what} {why}: {fix}"
