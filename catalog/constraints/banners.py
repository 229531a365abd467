"""Selection-wide warnings and the badge: the N5 VRAM banner, the §2.2 TP hint / TP-exceeds-devices
warning, the §2.8 text_only / encoder_parallel exclusion, and the B1 "Verified on …" badge.
"""

from __future__ import annotations

from .. import gates
from ..plan_notes import single_node_tp_hint
from .choices import KV_OFF, Options, _num
from .context import _Ctx


def _banners(ctx: _Ctx, opts: Options) -> None:
    """N5 VRAM banner, §2.2 TP hint (TP < devices) and TP-exceeds-devices warning, LMCache strategy hint,
    B1 badge."""
    p, s = ctx.profile, ctx.strategy
    name = p.display_name or ctx.hw_id
    need = ctx.variant.vram_minimum_gb
    single = s is None or s.deploy_type == "single_node" or (s.deploy_type == "multi_node" and ctx.nodes == 1)
    if single and need is not None and ctx.node_vram is not None and need > ctx.node_vram:  # N5
        per = p.vram_per_device_gb
        # a CPU node's "devices" are NUMA nodes and its memory host RAM: no VRAM, no GPU to switch to
        cpu = p.memory_term == "RAM"
        opts.warnings.append(
            f"Insufficient {p.memory_term} for single-node: {name} provides {ctx.gpus}×{_num(per)}G = "
            f"{_num(ctx.node_vram)}GB{' of RAM' if cpu else ''}, but this variant needs at least {_num(need)}GB "
            "for weights alone (KV cache requires more). "
            + ("Switch to a machine with more RAM" if cpu else "Switch to a higher-memory GPU")
            + ", use multi-node TP, or lower --max-model-len to shrink the KV cache footprint.")
    if ctx.strategy_id == "single_node_tp" and ctx.nodes == 1:  # §2.2 [UI] hint
        # Decision: the hint only when TP < devices, also on CPU (the
        # spec's "(or CPU)" printed "runs on 4 of 4 … to scale up"); CPU TP is not clamped (§2.2
        # step 1), so TP > devices is a warning naming both numbers.
        tp = gates.single_node_tp(ctx.recipe, ctx.variant, "single_node_tp", ctx.hw_id, p, ctx.gpus)
        unit = "CPU NUMA node(s)" if p.gen == "cpu" else "GPUs"
        hint = single_node_tp_hint(ctx.recipe, ctx.variant, ctx.strategy_id, ctx.nodes, ctx.hw_id, p, ctx.gpus,
                                   ctx.advanced_args)
        if hint is not None:  # the plan's notes print the same text (catalog/plan_notes.py)
            opts.warnings.append(hint)
        elif tp > ctx.gpus:
            opts.warnings.append(f"TP {tp} exceeds the {ctx.gpus} device(s) per node of {name} — the recipe's "
                                 f"--tensor-parallel-size {tp} needs {tp} {unit}; set Devices per node or "
                                 "override --tensor-parallel-size via Advanced.")
    if {"text_only", "encoder_parallel"} <= set(ctx.features):  # §2.8 [UI] mutual exclusion
        opts.warnings.append("text_only and encoder_parallel are mutually exclusive — enabling one clears "
                             "the other.")
    if ctx.recipe.meta.hardware.get(ctx.hw_id) == "verified" and ctx.kv == KV_OFF:  # B1
        opts.badge = f"Verified on {p.brand} {name}"
