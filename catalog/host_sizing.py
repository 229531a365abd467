"""Offload and companion sizes taken from the node a plan is for (docs/fit.md §9).

The reference builder renders one size per selection whatever the node (:mod:`.hostfit` lists them:
LMCache ``--l1-size-gb 512`` / ``--max-cpu-workers 8``, OffloadingConnector ``cpu_bytes_to_use`` 512 GiB, Simple
``cpu_bytes_to_use_per_rank`` 220 GiB, Mooncake ``global_segment_size`` 500GB per store node /
100GB per GPU). :func:`size_to_host` runs only when the plan is for the detected node
(:func:`.planner.plan_selection` with a host): each such size the builder set that is above what
this node can pin is lowered to the node's share (:func:`.hostfit.suggested_gib`: 75 % of the usable
RAM on accelerator nodes, 50 % on CPU nodes, never above the RAM free now; LMCache CPU workers to
the node's CPUs), and a note names the
new value and the builder's. Plans for another machine (no host; the golden corpus) keep the
builder's text.

Rules:

* **Only the builder's values.** A size the person gave (``companion_args`` ``l1_size_gb``, a
  ``--kv-transfer-config`` of their own through ``--arg``) is kept; the host-fit warnings then say
  what to lower. A builder's value that fits is kept too (sizing never raises a size).
* **Units** as each consumer reads them: ``--l1-size-gb`` GiB (LMCache; the launcher's preflight
  reads it so), connector byte counts bytes, Mooncake ``"NGB"`` strings with GB = 1024³
  (vLLM 0.32 ``_parse_size``, ``vllm/distributed/mooncake_store.py``).
* **Per-rank knobs** are divided by the ranks on the node (:func:`.common.parallelism.devices_on_node`):
  Simple's ``cpu_bytes_to_use_per_rank`` and the embedded Mooncake ``global_segment_size`` (one
  segment per vLLM worker); OffloadingConnector ``cpu_bytes_to_use`` is the total over the
  ``--nnodes`` nodes (this node's share × nodes).
* The standalone Mooncake store's segment (``MOONCAKE_STORE_CONFIG_PATH``) is sized for this node,
  where a single-node plan runs it; a note says to size it to the store node's RAM when that is
  another machine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from vllm_deploy_wizard.common.byte_sizes import mooncake_size_bytes
from vllm_deploy_wizard.common.flags import last_flag_value, set_flag
from vllm_deploy_wizard.common.parallelism import devices_on_node

from .hostfit import ACCELERATOR_NODE_SHARE, CPU_NODE_SHARE, GIB, LMCACHE_PROCESS, HostCapacity, suggested_gib

_SERVE_ROLES = ("serve", "head", "worker", "prefill", "decode")
def node_share(cat: Any, plan: Any) -> float:
    """The share of usable RAM a CPU tier may pin for ``plan``'s hardware (CPU profile: 50 %)."""
    profile = cat.taxonomy.hardware_profiles.get(str(plan.resolved.get("hardware") or ""))
    return CPU_NODE_SHARE if profile is not None and profile.gen == "cpu" else ACCELERATOR_NODE_SHARE


def size_to_host(cat: Any, plan: Any, host: HostCapacity, given: Mapping[str, Any] | None = None) -> list[str]:
    """Lower the builder's offload / companion sizes of ``plan`` (a LaunchPlan, changed in place)
    to what ``host`` can pin (module docstring); returns one note per size changed.

    ``given``: the selection's ``companion_args`` (the person's values, kept). Nothing changes when
    the usable RAM is unknown or under 1 GiB (the host-fit warnings then say so).
    """
    n = suggested_gib(host, node_share(cat, plan))
    if not n or n < 1:
        return []
    given = given or {}
    basis = sizing_basis(host, node_share(cat, plan))
    notes: list[str] = []
    builder_configs = _builder_transfer_configs(cat)
    for proc in plan.processes:
        if proc.name.startswith(LMCACHE_PROCESS):
            notes += [] if "l1_size_gb" in given else _size_lmcache(proc, n, basis)
            notes += [] if "max_cpu_workers" in given else _size_lmcache_workers(proc, host.cpus)
        elif proc.role in _SERVE_ROLES:
            notes += _size_transfer_config(proc, n, builder_configs, basis)
    notes += _size_mooncake(plan, n, basis)
    return list(dict.fromkeys(notes))


def sizing_basis(host: HostCapacity, share: float) -> str:
    """What a sized value was taken from, in the words of :mod:`vllm_deploy_wizard.common.memory_labels`:
    ``75% of 23.5 GiB usable for offload, at most 20.0 GiB available``."""
    from vllm_deploy_wizard.common.memory_labels import gib

    text = f"{share:.0%} of {gib(host.usable_bytes)} usable for offload"
    return text + (f", at most {gib(host.available_bytes)} available" if host.available_bytes else "")


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _size_lmcache(proc: Any, n: int, basis: str) -> list[str]:
    """``--l1-size-gb`` (and ``--l1-init-size-gb`` above it) of the LMCache server down to ``n`` GiB."""
    l1 = _number(last_flag_value(proc.argv, "--l1-size-gb"))
    if l1 is None or l1 <= n:
        return []
    proc.argv = set_flag(proc.argv, "--l1-size-gb", str(n))
    init = _number(last_flag_value(proc.argv, "--l1-init-size-gb"))
    also = ""
    if init is not None and init > n:
        proc.argv = set_flag(proc.argv, "--l1-init-size-gb", str(n))
        also = f" and --l1-init-size-gb {n}"
    return [f"sized for this node: LMCache --l1-size-gb {n}{also} ({proc.name}; {basis}; the recipe's "
            f"{l1:g} GiB; `plan --l1-size-gb N` sets another)"]


def _size_lmcache_workers(proc: Any, cpus: int | None) -> list[str]:
    """``--max-cpu-workers`` of the LMCache server down to the node's CPUs."""
    workers = _number(last_flag_value(proc.argv, "--max-cpu-workers"))
    if workers is None or not cpus or workers <= cpus:
        return []
    proc.argv = set_flag(proc.argv, "--max-cpu-workers", str(cpus))
    return [f"sized for this node: LMCache --max-cpu-workers {cpus} ({proc.name}; the recipe's {workers:g} is more "
            f"than this node's {cpus} CPUs)"]


def _builder_transfer_configs(cat: Any) -> set[str]:
    """The ``--kv-transfer-config`` texts the catalog's KV offload options render (the builder's)."""
    out: set[str] = set()
    for option in cat.taxonomy.kv_offload.values():
        args = list(getattr(option, "args", None) or [])
        for i, tok in enumerate(args[:-1]):
            if tok == "--kv-transfer-config":
                out.add(args[i + 1])
    return out


def _size_transfer_config(proc: Any, n: int, builder: set[str], basis: str) -> list[str]:
    """OffloadingConnector ``cpu_bytes_to_use`` / Simple ``cpu_bytes_to_use_per_rank`` of the
    builder's ``--kv-transfer-config`` down to ``n`` GiB on this node (pip and docker forms alike)."""
    text = last_flag_value(proc.argv, "--kv-transfer-config")
    if not text or text not in builder:
        return []
    config = json.loads(text)
    extra = config.get("kv_connector_extra_config")
    if not isinstance(extra, dict):
        return []
    connector = config.get("kv_connector")
    if connector == "OffloadingConnector" and isinstance(extra.get("cpu_bytes_to_use"), int):
        nodes = int(_number(last_flag_value(proc.argv, "--nnodes")) or 1)
        key, new = "cpu_bytes_to_use", n * GIB * max(1, nodes)
        old, fits = extra[key], extra[key] / max(1, nodes) <= n * GIB
    elif connector == "SimpleCPUOffloadConnector" and isinstance(extra.get("cpu_bytes_to_use_per_rank"), int):
        ranks = devices_on_node(proc.argv) or 1
        key, new = "cpu_bytes_to_use_per_rank", max(1, n // ranks) * GIB
        old, fits = extra[key], extra[key] * ranks <= n * GIB
    else:
        return []
    if fits:
        return []
    extra[key] = new
    sized = json.dumps(config, separators=(",", ":"))
    proc.argv = set_flag(proc.argv, "--kv-transfer-config", sized)
    return [f"sized for this node: {connector} {key} {new} ({new / GIB:.0f} GiB; {basis}; the recipe's "
            f"{old / GIB:.0f} GiB)"]


def _size_mooncake(plan: Any, n: int, basis: str) -> list[str]:
    """``global_segment_size`` of the plan's Mooncake config files down to this node's share: the
    standalone store's whole segment, the embedded (per vLLM worker) segment × ranks on the node."""
    notes: list[str] = []
    files = getattr(plan, "config_files", None) or {}
    serve = next((p for p in plan.processes if p.role in _SERVE_ROLES), None)
    ranks = (devices_on_node(serve.argv) if serve is not None else None) or 1
    for env, per_rank in (("MOONCAKE_STORE_CONFIG_PATH", False), ("MOONCAKE_CONFIG_PATH", True)):
        body = files.get(env)
        if not isinstance(body, dict):
            continue
        old = mooncake_size_bytes(body.get("global_segment_size"))
        if not old:  # 0: standalone-store vLLM side donates nothing (vLLM refuses anything else)
            continue
        share = ranks if per_rank else 1
        if old * share <= n * GIB:
            continue
        new = max(1, n // share)
        files[env] = {**body, "global_segment_size": f"{new}GB"}  # a copy: the catalog's template stays
        where = (f"per vLLM worker × {ranks} on this node" if per_rank else
                 "the store's pool; size it to the store node's RAM when the store runs on another machine")
        notes.append(f"sized for this node: Mooncake global_segment_size {new}GB in {env} ({where}; {basis}; "
                     f"the recipe's {body.get('global_segment_size')})")
    return notes
