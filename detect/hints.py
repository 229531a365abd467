"""Deployment hints derived from an inventory: multi-node fabric and IAXL KVShrink eligibility.

These are the facts the wizard's option gates ask for (docs/detection.md §3.7 eligibility, §5.3
fabric), named as in the fixtures' ``host_hints`` blocks so the shared fixtures check them.
IAXL needs an Intel CPU host (CPU-only) or NVIDIA GPUs on a 4th-Gen-Xeon-or-later host; its QAT
path needs at least TP-size QAT physical functions, so ``iaxl_max_tp_by_qat`` is the PF count.
Per-profile exclusions (gb200, gb300, …) are the matcher's business (its notes).
"""

from __future__ import annotations

from typing import Any

from vllm_deploy_wizard.detect.cpu import INTEL_MODELS
from vllm_deploy_wizard.detect.inventory import Inventory


def deployment_hints(inv: Inventory) -> dict[str, Any]:
    """``{multi_node_fabric, host_numa_nodes_with_cpus, host_ram_gib_for_kv, cpu_generation,
    cpu_is_xeon, iaxl_cpu_ok, iaxl_applicable, iaxl_qat_devices, iaxl_max_tp_by_qat}``."""
    cpu, host, primary = inv.cpu, inv.host, inv.primary
    cpu_ok = cpu.vendor == "Intel" and cpu.is_xeon and (cpu.family or -1, cpu.model or -1) in INTEL_MODELS
    if primary is None:
        applicable = cpu.vendor == "Intel"
    else:
        applicable = primary.brand == "NVIDIA" and cpu_ok
    return {
        "multi_node_fabric": host.fabric,
        "host_numa_nodes_with_cpus": host.numa_nodes_with_cpus,
        "host_ram_gib_for_kv": int(host.ram_bytes / 2**30) if host.ram_bytes else None,
        "cpu_generation": cpu.generation,
        "cpu_is_xeon": cpu.is_xeon,
        "iaxl_cpu_ok": cpu_ok,
        "iaxl_applicable": applicable,
        "iaxl_qat_devices": cpu.qat_pfs,
        "iaxl_max_tp_by_qat": cpu.qat_pfs,
    }
