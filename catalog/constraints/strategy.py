"""The Strategy row (docs/constraints.md §3.1 S1–S6, the §3.2 ``hardware_match`` decisions and S7) and the
Nodes row (N1–N4, §3.2 N6; :data:`MAX_NODES`).
"""

from __future__ import annotations

from vllm_deploy_wizard.common.contract import MAX_NODES

from .. import backends, gates
from ..defaults import has_multi_node, hidden_by_nodes, offered_by_hardware_match, scales_out, unlisted_strategy_text
from ..device_fit import engine_shortfall
from ..models import Strategy
from ..selection import Selection
from .choices import DISABLED, HIDDEN, Choice, _num
from .context import _Ctx


def _short(s: Strategy | None, sid: str) -> str:
    if s is None:
        return sid
    return s.short_label or s.display_name or sid


def _fit_selection(ctx: _Ctx, sid: str, nodes: int) -> Selection | None:
    """The selection ``ctx`` reads with ``sid`` at ``nodes`` nodes, for the device-fit rule (S7, N6);
    None when it is not one (the rows that own the bad value say why)."""
    try:
        # model_validate: install_mode and pd are the raw values pydantic checks and converts
        return Selection.model_validate(dict(
            model=ctx.recipe.hf_id, variant=ctx.variant_key, hardware=ctx.hw_id, gpus=ctx.gpus, strategy=sid,
            nodes=nodes, install_mode=ctx.install_mode, pd=ctx.pd or None, router=ctx.router,
            connector=ctx.connector, advanced_args=list(ctx.advanced_args)))
    except ValueError:
        return None


def _shortfall(ctx: _Ctx, sid: str, nodes: int) -> str | None:
    """docs/synthesis.md §2.15: why ``sid`` at ``nodes`` plans engines the node can't hold, or None."""
    sel = _fit_selection(ctx, sid, nodes)
    return engine_shortfall(ctx.catalog, sel) if sel is not None else None


def _strategy_row(ctx: _Ctx, warnings: list[str]) -> list[Choice]:
    """S1–S6 (§3.1), the §3.2 ``hardware_match`` decisions and S7 (§3.2), compatible strategies first."""
    recipe, hw, p = ctx.recipe, ctx.hw_id, ctx.profile
    effective = gates.offered_strategies(recipe)
    order = list(dict.fromkeys([*effective, *recipe.strategy_hardware, *ctx.catalog.strategies]))
    is_moe = (recipe.model.architecture or "").lower() == "moe"
    hw_name = p.display_name or hw
    out = []
    for sid in order:
        s = ctx.catalog.strategies.get(sid)
        if s is None or s.deploy_type == "kv_store_lb":  # S1 (and ids the catalog lacks)
            continue
        label = s.display_name or sid
        hm = s.hardware_match
        short = _short(s, sid)
        if hidden_by_nodes(s, ctx.nodes):  # S2
            why = "a single node" if s.deploy_type != "single_node" else f"{ctx.nodes} nodes"
            out.append(Choice(sid, label, HIDDEN, f"{label} is not offered for {why} — change the node count."))
            continue
        moe_only = hm is not None and (hm.architecture or "").lower() == "moe"
        if moe_only and not is_moe:  # §3.2, shown (not hidden) so a dense model says why there is no EP
            out.append(Choice(sid, label, DISABLED, f"{short} needs an MoE model"))
            continue
        listed = sid in effective or sid in recipe.strategy_hardware  # S3 (S5 below disables)
        # §3.2: DPA+TP is offered to every MoE model within its hardware_match, unverified when unlisted
        by_match = not listed and offered_by_hardware_match(recipe, sid, s, ctx.gpus, ctx.nodes)
        if not listed and not by_match:  # S3
            out.append(Choice(sid, label, HIDDEN, f"{recipe.hf_id} does not list {label} under "
                              "compatible_strategies."))
            continue
        if not gates.reachable(recipe, sid, hw, ctx.gpus, scales_out(s)):  # S4
            out.append(Choice(sid, label, HIDDEN, f"{label} can't reach this recipe's GPU floor on {hw_name}."))
            continue
        if not (gates.strategy_supported_on_hw(recipe, sid, hw, p) or by_match):  # S5
            out.append(Choice(sid, label, DISABLED, f"{label} isn't supported on {hw_name} for this model."))
            continue
        total = ctx.gpus * (max(ctx.nodes, 1) if s.deploy_type != "single_node" else 1)
        expert = sid.endswith(("tep", "dep")) or s.parallelism == "dpa_tp"
        if hm is not None and hm.min_gpus and expert and total < hm.min_gpus:  # §3.2
            out.append(Choice(sid, label, DISABLED,
                              f"{short} needs at least {hm.min_gpus} GPUs; {hw_name} has {total}"))
            continue
        if s.deploy_type in ("single_node", "multi_node"):  # S7 (docs/synthesis.md §2.15)
            short_of = _shortfall(ctx, sid, max(ctx.nodes, 2) if s.deploy_type == "multi_node" else 1)
            if short_of is not None:
                out.append(Choice(sid, label, DISABLED, f"{label} can't run on {hw_name}: {short_of}."))
                continue
        elif ctx.nodes <= 1 and (not p.scalable or p.gen == "xpu"):  # S7: co-located is PD's only shape (N2, N3)
            short_of = _shortfall(ctx, sid, 1)
            if short_of is not None:
                out.append(Choice(sid, label, DISABLED, f"{label} can't run on {hw_name}: {short_of}."))
                continue
        warning = None
        if hm is not None and hm.max_gpus and s.deploy_type == "single_node" and ctx.gpus > hm.max_gpus:
            warning = f"{short} is declared for at most {hm.max_gpus} GPUs per node; {hw_name} has {ctx.gpus}."
        elif hm is not None and hm.min_gpus and s.deploy_type == "pd_cluster" and \
                ctx.gpus * MAX_NODES >= hm.min_gpus > ctx.gpus * max(ctx.nodes, 2):
            warning = (f"{short} is declared for at least {hm.min_gpus} GPUs; {hw_name} nodes have "
                       f"{ctx.gpus} each — size the pools accordingly.")
        if by_match:  # no verified run: --allow-unverified lifts it and the plan says so
            text = unlisted_strategy_text(recipe, s, sid)
            if ctx.allow_unverified:
                out.append(Choice(sid, label, warning=warning or text, unverified=True))
            else:
                out.append(Choice(sid, label, DISABLED, text, unverified=True))
            continue
        out.append(Choice(sid, label, warning=warning))
        if warning and sid == ctx.strategy_id:
            warnings.append(warning)
    return out


def _nodes_row(ctx: _Ctx) -> list[Choice]:
    """N1–N4 (§3.1), N6 (§3.2); pills 1, 2 and the strategy floor when 2 < floor ≤ 16 (§2.14)."""
    recipe, p, hw = ctx.recipe, ctx.profile, ctx.hw_id
    floor = gates.nodes_for(recipe, ctx.strategy_id, hw, ctx.gpus) if scales_out(ctx.strategy) else 1
    counts = [1, 2]
    if 2 < floor <= MAX_NODES:
        counts.append(floor)
    if ctx.nodes not in counts and 1 <= ctx.nodes <= MAX_NODES:
        counts.append(ctx.nodes)
    counts.sort()
    name = p.display_name or hw
    has_multi = has_multi_node(ctx.catalog, recipe)
    need = ctx.variant.vram_minimum_gb
    out = []
    for n in counts:
        if n > 1:
            if not has_multi:  # N1
                out.append(Choice(str(n), str(n), DISABLED,
                                  "This recipe does not declare a multi-node strategy. Fits in a single node."))
            elif not p.scalable:  # N2
                out.append(Choice(str(n), str(n), DISABLED,
                                  f"{name} is a single-GPU workstation and can't be clustered into multiple nodes."))
            elif p.gen == "xpu":  # N3
                out.append(Choice(str(n), str(n), DISABLED, backends.XPU_MULTI_NODE))
            else:
                out.append(Choice(str(n), str(n)))
        elif need is not None and ctx.node_vram is not None and need > ctx.node_vram:  # N4
            out.append(Choice("1", "1", DISABLED,
                              f"Single-node can't fit this variant on {name} ({_num(need)}GB > "
                              f"{_num(ctx.node_vram)}GB) — use multi-node"))
        elif ctx.strategy is not None and ctx.strategy.deploy_type == "pd_cluster" and \
                (short_of := _shortfall(ctx, ctx.strategy_id, 1)) is not None:  # N6
            modes = [m.upper() for m in ("tp", "tep") if m in gates.pool_modes(recipe, hw, p, ctx.gpus)]
            other = f" Or pick {' or '.join(modes)} pools." if modes and "DEP" in short_of else ""
            out.append(Choice("1", "1", DISABLED, f"One node can't hold both PD pools: {short_of}.{other}"))
        else:
            out.append(Choice("1", "1"))
    return out
