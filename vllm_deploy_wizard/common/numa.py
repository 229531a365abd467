"""The NUMA node a vLLM CPU rank is sized against — one rule for the planner's host fit and the
launcher's memory check.

vLLM's CPU backend binds each rank to one NUMA node with CPUs (``VLLM_CPU_OMP_THREADS_BIND``,
vllm/platforms/cpu.py, 0.32), so what one rank may use is one such node's memory; with nodes of
different sizes the smallest is the one every rank must fit (docs/detection.md §5.1). Nodes are
read by attribute (detect's ``NumaNode``: ``id``, ``cpus``, ``mem_bytes``, …), so any object with
those attributes works.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def rank_numa_node(nodes: Iterable[Any]) -> Any | None:
    """The NUMA node a CPU rank is sized against: the smallest (by ``mem_bytes``) of the nodes that
    have CPUs and a known size; else the first node with CPUs; else node 0; None when there is none."""
    nodes = list(nodes or [])
    with_cpus = [n for n in nodes if getattr(n, "cpus", 0)]
    sized = [n for n in with_cpus if getattr(n, "mem_bytes", None)]
    if sized:
        return min(sized, key=lambda n: n.mem_bytes)
    if with_cpus:
        return with_cpus[0]
    return next((n for n in nodes if getattr(n, "id", None) == 0), None)
