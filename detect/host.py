"""Host facts for deployment choices: RAM, NUMA, disks, network, container (docs/detection.md §5).

Host RAM usable for KV offload is the sum of the NUMA nodes that *have CPUs*: on non-CDMM Grace
systems each GPU's HBM is a memory-only node and MemTotal would count it (§5.1). The network
fabric decides whether multi-node strategies make sense (§5.3); the primary IPv4 and its interface
are the defaults offered for ``$HEAD_IP`` and ``$IFACE_NAME``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from vllm_deploy_wizard.detect.facts import Facts, cpulist_count
from vllm_deploy_wizard.detect.inventory import Disk, HostFacts, NetPort, NumaNode, ProbeResult, Status

#: POSIX shared memory (vLLM's message rings between its processes, NCCL's intra-node transport).
SHM_PATH = "/dev/shm"
#: Filesystems that pool one cache across instances (§5.4).
SHARED_FS = ("nfs", "nfs4", "lustre", "gpfs", "wekafs", "beegfs", "cifs", "fuse.weka")
#: Device-control variables reported as set (§1, §3).
VISIBILITY_VARS = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                   "ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR", "ASCEND_RT_VISIBLE_DEVICES",
                   "ASCEND_VISIBLE_DEVICES", "TPU_VISIBLE_CHIPS", "CPU_VISIBLE_MEMORY_NODES")
_RATE = re.compile(r"([\d.]+)\s*Gb/sec")
#: Where TCMalloc and Intel OpenMP (the vLLM CPU backend's LD_PRELOAD, docs/backends.md §7) are looked for.
LIBRARY_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")
TCMALLOC_NAMES = ("libtcmalloc_minimal.so.4", "libtcmalloc.so.4")
IOMP_NAMES = ("libiomp5.so",)
PRELOAD_CANDIDATES = tuple(f"{d}/{n}" for d in LIBRARY_DIRS for n in (*TCMALLOC_NAMES, *IOMP_NAMES))


def preload_libraries(present: list[str]) -> list[str]:
    """The first TCMalloc then the first Intel OpenMP library among ``present`` paths."""
    out = []
    for names in (TCMALLOC_NAMES, IOMP_NAMES):
        hit = next((p for p in present if p.rsplit("/", 1)[-1] in names), None)
        if hit:
            out.append(hit)
    return out


def kv_candidate_paths(env: Mapping[str, str]) -> list[str]:
    """Candidate KV-tier directories: the seed's /mnt/kv_cache, the HF cache, $HOME, /tmp."""
    home = env.get("HOME") or "/root"
    hf = env.get("HF_HOME") or os.path.join(home, ".cache", "huggingface")
    out = []
    for path in ("/mnt/kv_cache", hf, home, "/tmp"):
        if path not in out:
            out.append(path)
    return out


def probe(facts: Facts) -> tuple[ProbeResult, HostFacts]:
    """Collect host facts. Never raises."""
    env = facts.env()
    host = HostFacts(arch=facts.arch(), kernel=facts.kernel())
    mem = facts.meminfo_kb()
    if mem.get("MemTotal"):
        host.mem_total_bytes = mem["MemTotal"] * 1024
    if mem.get("MemAvailable"):
        host.mem_available_bytes = mem["MemAvailable"] * 1024
    numa = facts.numa()
    for node_id, node in sorted((numa.get("nodes") or {}).items(), key=lambda kv: int(kv[0])):
        cpulist = str(node.get("cpulist") or "")
        kb = node.get("mem_total_kb")
        free_kb = node.get("mem_free_kb")
        available_kb = node.get("mem_available_kb")
        host.numa_nodes.append(NumaNode(id=int(node_id), cpus=cpulist_count(cpulist), cpulist=cpulist,
                                        mem_bytes=int(kb) * 1024 if kb else None,
                                        free_bytes=int(free_kb) * 1024 if free_kb else None,
                                        available_bytes=int(available_kb) * 1024 if available_kb else None))
    host.preload_libraries = preload_libraries(facts.existing_paths(PRELOAD_CANDIDATES))
    with_cpus = [n for n in host.numa_nodes if n.cpus > 0 and n.mem_bytes]
    memory_only = [n for n in host.numa_nodes if n.cpus == 0 and n.mem_bytes]
    if memory_only and with_cpus:
        host.ram_bytes = sum(n.mem_bytes or 0 for n in with_cpus)
        host.notes.append(f"{len(memory_only)} memory-only NUMA node(s) (GPU HBM) are counted in MemTotal; host RAM "
                          "for KV offload is the sum of the nodes that have CPUs")
    else:
        host.ram_bytes = host.mem_total_bytes or sum(n.mem_bytes or 0 for n in with_cpus) or None
    host.cgroup_limit_bytes = facts.cgroup_memory_limit()
    if host.cgroup_limit_bytes:
        host.cgroup_usage_bytes = facts.cgroup_memory_usage()
    shm = next((d for d in facts.disks([SHM_PATH]) if d.get("mount") == SHM_PATH), None)
    if shm is not None:
        host.shm_total_bytes = int(shm.get("size_bytes") or 0) or None
        host.shm_free_bytes = int(shm.get("free_bytes") or 0) if shm.get("size_bytes") else None
    for disk in facts.disks(kv_candidate_paths(env)):
        fs = disk.get("fs")
        host.disks.append(Disk(path=str(disk.get("mount")), total_bytes=int(disk.get("size_bytes") or 0),
                               free_bytes=int(disk.get("free_bytes") or 0), fs_type=fs,
                               shared=bool(fs and str(fs).lower() in SHARED_FS)))
    for port in facts.infiniband():
        layer = str(port.get("link_layer") or "")
        rate = _RATE.search(str(port.get("rate") or ""))
        host.ports.append(NetPort(name=f"{port.get('dev')}/{port.get('port')}",
                                  kind="roce" if layer == "Ethernet" else "infiniband",
                                  state=port.get("state"), rate_gbps=float(rate.group(1)) if rate else None,
                                  numa_node=port.get("numa_node"), netdev=port.get("netdev")))
    for nic in facts.net():
        speed = nic.get("speed_mbps")
        host.ports.append(NetPort(name=str(nic.get("iface")), kind="ethernet", state=nic.get("operstate"),
                                  rate_gbps=speed / 1000 if speed else None, netdev=nic.get("iface")))
    active = [p for p in host.ports if "ACTIVE" in str(p.state or "").upper() or str(p.state).lower() == "up"]
    kinds = {p.kind for p in active}
    host.fabric = next((k for k in ("infiniband", "roce", "ethernet") if k in kinds), "none")
    host.default_iface, host.primary_ip = facts.primary_address()
    host.container_hints = facts.container_hints()
    host.in_container = bool(host.container_hints)
    host.wsl = "microsoft" in facts.proc_version().lower()
    host.visibility = {k: env[k] for k in VISIBILITY_VARS if k in env and env[k] is not None}
    if host.cgroup_limit_bytes and host.ram_bytes and host.cgroup_limit_bytes < host.ram_bytes:
        host.notes.append(f"container memory limit {host.cgroup_limit_bytes / 2**30:.1f} GiB caps what KV offload "
                          f"may pin (host has {host.ram_bytes / 2**30:.1f} GiB)")
    status: Status = "ok" if host.mem_total_bytes else "degraded"
    ram = f"{host.ram_bytes / 2**30:.1f} GiB RAM" if host.ram_bytes else "RAM unknown"
    return ProbeResult(status, f"{ram}, {host.numa_nodes_with_cpus} NUMA node(s) with CPUs, fabric {host.fabric}"), host
