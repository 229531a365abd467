"""Whether a strategy's engines fit the devices of their node (``docs/synthesis.md`` §2.15).

The reference builder renders some shapes that no vLLM can start, and the goldens pin that text
(docs/synthesis.md §2.6): single-node DEP that keeps a recipe's TP beside ``--data-parallel-size``
(MiniMax-M2 on MI300X: TP 2 × DP 8 = 16 devices on 8), multi-node DEP that keeps TP 8 beside
``--data-parallel-size-local`` = the node's devices, co-located PD pools that keep the full node's
DP on half of it. The wizard keeps the reference text and does not *offer* those shapes
(docs/constraints.md §3.2 S7, N6): :func:`engine_shortfall` says why one does not fit.

The rule mirrors vLLM 0.32.0: an engine uses TP × PP devices per DP rank and
``--data-parallel-size-local`` DP ranks on its node (``vllm/config/parallel.py``,
``world_size_across_dp``; the same count as :func:`~vllm_deploy_wizard.common.parallelism.devices_on_node`
and the launcher's preflight), and a NIXL connector binds one handshake listener per DP rank at
``VLLM_NIXL_SIDE_CHANNEL_PORT`` + DP rank (``vllm/distributed/kv_transfer/kv_connector/v1/nixl/
base_scheduler.py``): two co-located pools whose bases are one apart overlap once a pool runs DP > 1.
"""

from __future__ import annotations

import math
from typing import Any

from vllm_deploy_wizard.common.errors import SelectionError
from vllm_deploy_wizard.common.flags import last_flag_value
from vllm_deploy_wizard.common.parallelism import DATA_PARALLEL, devices_on_node

from .backends import backend_for
from .loader import Catalog
from .selection import Selection


def _engine_argv(ctx: Any, node_role: str, role: str | None = None) -> list[str]:
    """The argv of the rank-0 engine of ``role`` (or of the single/multi-node shape), deduped as
    synthesis emits it."""
    from .processes import serve_process

    toks = ctx.build_args(node_role, 0, role=role) if role else ctx.build_args(node_role, 0)
    return serve_process(ctx, "fit", node_role, 0, toks, {}).argv


def engine_shortfall(catalog: Catalog, selection: Selection) -> str | None:
    """Why the engines ``selection`` plans do not fit their node, or None when they do.

    Single-/multi-node shapes: the head engine's TP × PP × DP-local must be at most the node's
    devices (``selection.gpus`` or the profile's count). A PD pool placed on its own node(s) the
    same; a co-located pool (0 pool nodes: half the node each, CUDA_VISIBLE_DEVICES split) must fit
    its half and, outside docker (each container has its own ports), run DP 1 so the NIXL
    side-channel bases 5557/5558 of the two pools do not overlap. A selection that does not resolve
    (an id the catalog lacks, a custom model) returns None: the rows that own those ids say why.
    Omni recipes and CPU backends (a rank is a set of cores, not a device; the launcher's preflight
    does not count devices there either): None.
    """
    from .resolution import resolve

    try:
        ctx = resolve(catalog, selection)
    except (SelectionError, KeyError, ValueError):
        return None
    if ctx.recipe.is_omni or ctx.strategy is None or ctx.deploy == "kv_store_lb":
        return None
    if backend_for(ctx.profile).key == "cpu":  # ranks are NUMA-bound threads, not devices (docs/backends.md §7)
        return None
    n = ctx.gpu_count
    if not ctx.is_pd:
        multi = ctx.deploy == "multi_node" and ctx.nodes > 1
        argv = _engine_argv(ctx, "head" if multi else "serve")
        need = devices_on_node(argv)
        if need is not None and need > n:
            return (f"its engine needs {need} devices per node (tensor × pipeline × data-parallel-local"
                    f" of the recipe's command) and a node has {n}")
        return None
    for role in ("prefill", "decode"):
        why = _pool_shortfall(ctx, role)
        if why is not None:
            return why
    return None


def _pool_vram(ctx: Any, devices: int) -> tuple[float, float] | None:
    """(GB the variant needs, GB ``devices`` devices of the profile hold), or None when either is
    unknown (the variant's ``vram_minimum_gb``, the profile's per-device VRAM)."""
    need = ctx.variant.vram_minimum_gb
    per = ctx.profile.vram_per_device_gb
    if not need or not per:
        return None
    return float(need), per * devices


def _pool_shortfall(ctx: Any, role: str) -> str | None:
    """Why the ``role`` pool of the resolved PD context ``ctx`` can't run, or None (see
    :func:`engine_shortfall`): devices, the variant's VRAM minimum on the pool's devices, NIXL ports."""
    n = ctx.gpu_count
    pool = ctx.pools[role]
    argv = _engine_argv(ctx, role, role=role)
    need = devices_on_node(argv) or 1
    share = n // 2 if role == "prefill" else n - n // 2
    vram = _pool_vram(ctx, pool.nodes * n if pool.nodes >= 1 else share)
    if pool.nodes >= 1:
        if need > n:
            return f"the {role} pool's engine needs {need} devices per node and a node has {n}"
        if vram is not None and vram[0] > vram[1]:
            words = "1 node" if pool.nodes == 1 else f"{pool.nodes} nodes"
            return (f"the {role} pool's {words} can't fit this variant ({_gb(vram[0])}GB > "
                    f"{_gb(vram[1])}GB)")
        return None
    if need > share:
        how = " (DEP sizes it to the whole node)" if pool.mode == "dep" else ""
        return (f"co-located pools split the node's {n} devices ({share} for {role}), but the {role} "
                f"engine needs {need}{how} — give each pool a node of its own (2 or more nodes)")
    if vram is not None and vram[0] > vram[1]:
        return (f"co-located pools split the node's {n} devices ({share} for {role}) and half a node "
                f"can't fit this variant ({_gb(vram[0])}GB > {_gb(vram[1])}GB)")
    value = last_flag_value(argv, *DATA_PARALLEL)
    dp = int(value) if value is not None and value.isdigit() else 1
    if dp > 1 and ctx.install_mode != "docker":  # each container has its own ports
        return (f"co-located pools' NIXL side-channel bases are one port apart and the {role} pool "
                f"runs DP {dp} (one listener per DP rank) — give each pool a node of its own")
    return None


def _gb(value: float) -> str:
    """``value`` GB as the option rows print it (805, 564, 70.5)."""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def pool_nodes_needed(ctx: Any) -> int | None:
    """The fewest whole nodes whose devices hold the variant's VRAM minimum (None when unknown)."""
    need, per = ctx.variant.vram_minimum_gb, ctx.profile.vram_per_device_gb
    if not need or not per or not ctx.gpu_count:
        return None
    return max(1, math.ceil(float(need) / (per * ctx.gpu_count) - 1e-9))


def pool_size_refusals(catalog: Catalog, selection: Selection) -> dict[str, str]:
    """``{role: why}`` for each PD pool whose size ``selection`` gives (``pd.<role>.nodes``, the CLI's
    ``--pd-prefill``/``--pd-decode N``) and that can't run (docs/constraints.md §3.2 N6): the reason
    of :func:`engine_shortfall` for that pool plus the sizes that would be valid. Empty outside
    ``pd_cluster``, on CPU backends, or when the selection does not resolve."""
    from .resolution import resolve

    pd = selection.pd
    sized = [r for r in ("prefill", "decode") if pd is not None and getattr(pd, r) is not None
             and getattr(pd, r).nodes is not None]
    if not sized:
        return {}
    try:
        ctx = resolve(catalog, selection)
    except (SelectionError, KeyError, ValueError):
        return {}
    if not ctx.is_pd or backend_for(ctx.profile).key == "cpu":
        return {}
    out = {}
    for role in sized:
        why = _pool_shortfall(ctx, role)
        if why is None:
            continue
        least = pool_nodes_needed(ctx) or 1
        out[role] = f"{why}. Valid: --pd-{role} {least} or more (whole nodes of its own)"
    return out


#: Brands whose devices per node the profile fixes: a whole GPU is one vLLM device (a MIG GPU too:
#: one CUDA device per GPU, docs/fit.md §10). Elsewhere vLLM may see more devices than the profile
#: counts — AMD compute partitions (CPX: 64 on an 8-GPU MI300X), TPU7x TensorCores, Intel XPU tiles,
#: a CPU backend's NUMA nodes (docs/catalog.md §5) — so ``--gpus`` above ``gpu_count`` stays a warning.
FIXED_DEVICE_BRANDS = ("NVIDIA",)


def gpus_shortfall(profile: Any, gpus: int | None, on_node: bool) -> str | None:
    """Why ``gpus`` devices per node (``plan --gpus``) can't be a node of ``profile``, or None.

    Refused only off the detected node (``on_node`` False: on it, the count vLLM sees there wins)
    and for :data:`FIXED_DEVICE_BRANDS` profiles that are not CPU backends; the reason names the
    profile's count and what to use for more devices (more nodes)."""
    count = profile.gpu_count
    if on_node or not gpus or not count or gpus <= count or profile.brand not in FIXED_DEVICE_BRANDS \
            or backend_for(profile).key == "cpu":
        return None
    name = profile.display_name or "this profile"
    scale = ("; more devices = more nodes (--nodes with a multi_node_* or pd_cluster strategy)"
             if profile.scalable else "")
    return (f"{name} has {count} devices per node (the profile's gpu_count), not {gpus}. "
            f"Valid: --gpus 1 to {count}{scale}")
