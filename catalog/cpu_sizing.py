"""Node-sized CPU settings of a CPU-backend serve process (docs/backends.md §7): the KV cache space
(:func:`cpu_kvcache_space_gib`, :data:`CPU_KV_SHARE` of a NUMA node's free memory), OpenMP thread
binding per rank (:func:`omp_threads_bind`, :func:`format_cpu_list`) and the env of one process
(:func:`cpu_node_env`). :func:`~vllm_deploy_wizard.catalog.backends.apply_host_settings` applies them to a plan.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from vllm_deploy_wizard.common.parallelism import devices_on_node

# ---------------------------------------------------------------------------------------------
# node-sized CPU settings

GIB = 2**30
#: CPUs left to the API server and the OS before OpenMP threads are bound (docs/backends.md §7).
API_SERVER_CPUS = 1
#: Share of one NUMA node's free memory the KV cache may take; the rest holds weights and activations.
CPU_KV_SHARE = 0.5
def format_cpu_list(cpus: Iterable[int]) -> str:
    """``[0,1,2,5,6]`` → ``"0-2,5-6"`` (the kernel's cpulist format)."""
    ids = sorted(set(int(c) for c in cpus))
    out: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)


def omp_threads_bind(numa_cpus: list[list[int]], ranks: int, reserve: int = API_SERVER_CPUS) -> str | None:
    """``VLLM_CPU_OMP_THREADS_BIND``: one CPU list per rank, ``|``-separated (docs/backends.md §7).

    ``numa_cpus``: CPUs of each NUMA node (physical cores first when the caller knows them). Ranks
    go one per NUMA node while there are enough nodes, else the nodes' CPUs are split evenly; the
    first ``reserve`` CPUs of node 0 stay free for the API server. None when a rank would get no CPU.
    """
    nodes = [sorted(c) for c in numa_cpus if c]
    if not nodes or ranks < 1:
        return None
    nodes[0] = nodes[0][reserve:] if len(nodes[0]) > reserve else nodes[0]
    if len(nodes) >= ranks:
        groups = nodes[:ranks]
    else:
        pool = [c for n in nodes for c in n]
        per = len(pool) // ranks
        if per < 1:
            return None
        groups = [pool[i * per:(i + 1) * per] for i in range(ranks)]
    if any(not g for g in groups):
        return None
    return "|".join(format_cpu_list(g) for g in groups)


def cpu_kvcache_space_gib(numa_free_bytes: list[int] | None, fallback_free: int | None) -> int | None:
    """``VLLM_CPU_KVCACHE_SPACE`` in GiB: :data:`CPU_KV_SHARE` of the smallest NUMA node's free
    memory (each rank's KV cache lives on its node), floored, at least 1; None when unknown."""
    free = min(numa_free_bytes) if numa_free_bytes else fallback_free
    if not free:
        return None
    return max(1, int(free * CPU_KV_SHARE // GIB))


def cpu_node_env(host: Any, tokens: list[str]) -> dict[str, str]:
    """Node-sized CPU env for one serve process (docs/backends.md §7), from a
    :class:`~vllm_deploy_wizard.catalog.hostfit.HostCapacity` ``host`` and the process's serve tokens:
    ``VLLM_CPU_KVCACHE_SPACE``, ``VLLM_CPU_OMP_THREADS_BIND`` (one list per rank) and ``LD_PRELOAD``
    of the TCMalloc / iomp libraries the host has. Keys whose facts are unknown are left out."""
    env: dict[str, str] = {}
    ranks = (devices_on_node(tokens) or 1)
    space = cpu_kvcache_space_gib(getattr(host, "numa_free_bytes", None), getattr(host, "available_bytes", None))
    if space:
        env["VLLM_CPU_KVCACHE_SPACE"] = str(space)
    numa = getattr(host, "numa_cpus", None)
    if not numa and getattr(host, "cpu_list", None):
        numa = [list(host.cpu_list)]
    bind = omp_threads_bind(numa, ranks) if numa else None
    if bind:
        env["VLLM_CPU_OMP_THREADS_BIND"] = bind
    libs = list(getattr(host, "preload_libraries", None) or [])
    if libs:
        env["LD_PRELOAD"] = ":".join(libs)
    return env
