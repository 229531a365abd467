"""The PD rows under ``pd_cluster`` (docs/constraints.md §3.1 PD1–PD2, docs/synthesis.md §4.7–4.8): pool
modes per role (:data:`POOL_MODES`, :data:`POOL_MODE_TIPS`), connectors and routers, and the
effective pool mode of a role.
"""

from __future__ import annotations

from .. import gates
from ..defaults import default_pool_mode
from ..device_fit import pool_size_refusals
from .choices import AVAILABLE, DISABLED, HIDDEN, KV_OFF, Choice, Options
from .context import _Ctx
from .strategy import _fit_selection

#: PD pool-mode pill tips (§3.1 PD1, verbatim).
POOL_MODE_TIPS = {
    "tp": "Tensor parallel — one engine sharded across the pool's GPUs; only the head node serves HTTP.",
    "tep": "Tensor parallel plus --enable-expert-parallel (MoE models).",
    "dep": "Data + expert parallel — one vllm serve per node, DP across nodes with EP (MoE throughput).",
}
#: Pool modes in pill order.
POOL_MODES = ("tp", "tep", "dep")


def _pd_rows(ctx: _Ctx, opts: Options) -> None:
    """PD1 pool modes per role, the given pool sizes that can't run (§3.2 N6), seed connectors/routers
    (§3.1 PD1, §4.7–4.8)."""
    s = ctx.strategy
    if s is None or s.deploy_type != "pd_cluster":
        return
    opts.kv_instances_visible = False  # M5
    allowed = gates.pool_modes(ctx.recipe, ctx.hw_id, ctx.profile, ctx.gpus)
    smg = ctx.router == "smg"
    for role in ("prefill", "decode"):
        row = []
        for m in POOL_MODES:
            if m not in allowed:
                row.append(Choice(m, m.upper(), HIDDEN, description=POOL_MODE_TIPS[m]))
            elif smg and m == "dep":
                row.append(Choice(m, m.upper(), DISABLED, "SMG serves TP/TEP pools only — pick the vLLM "
                                  "or Dynamo router for DEP pools.", description=POOL_MODE_TIPS[m]))
            else:
                row.append(Choice(m, m.upper(), description=POOL_MODE_TIPS[m]))
        if sum(c.state != HIDDEN for c in row) < 2:  # PD1: a single mode hides the pills
            row = [Choice(c.id, c.label, HIDDEN, c.reason, description=c.description) for c in row]
        opts.pd_modes[role] = row
    sel = _fit_selection(ctx, ctx.strategy_id, ctx.nodes)
    opts.pd_sizes = pool_size_refusals(ctx.catalog, sel) if sel is not None else {}
    brand, name = ctx.profile.brand, ctx.profile.display_name or ctx.hw_id
    routers = {"vllm": "vLLM Router"}
    if s.dynamo is not None:
        routers["dynamo"] = s.dynamo.display_name or "Dynamo"
    if s.smg is not None:
        routers["smg"] = s.smg.display_name or "SMG"
    conn = s.connectors.get(ctx.connector) if ctx.connector else None
    for cid, c in s.connectors.items():
        cname = c.display_name or cid
        allowed_routers = c.routers or ["vllm"]
        if c.brands and brand not in c.brands:
            opts.pd_connector.append(Choice(cid, cname, DISABLED,
                                            f"{cname} needs {' or '.join(c.brands)} hardware — not available on "
                                            f"{brand} {name}.", description=c.description))
        elif ctx.router not in allowed_routers:
            names = ", ".join(routers.get(r, r) for r in allowed_routers)
            opts.pd_connector.append(Choice(cid, cname, DISABLED, f"{cname} works with: {names}.",
                                            description=c.description))
        else:
            opts.pd_connector.append(Choice(cid, cname, description=c.description))
    for rid, rname in routers.items():
        reason = None
        if rid == "dynamo" and s.dynamo is not None and s.dynamo.brands and brand not in s.dynamo.brands:
            reason = f"{rname} needs {' or '.join(s.dynamo.brands)} hardware — not available on {brand} {name}."
        elif conn is not None and rid not in (conn.routers or ["vllm"]):
            reason = f"{conn.display_name or ctx.connector} works with: " + \
                ", ".join(routers.get(r, r) for r in (conn.routers or ["vllm"])) + "."
        warning = None
        if rid == "smg" and reason is None:
            modes = [(_pd_mode(ctx, r)) for r in ("prefill", "decode")]
            if "dep" in modes or ctx.kv != KV_OFF:
                warning = f"{rname} serves TP/TEP pools without KV offload — DEP pools and KV options are turned off."
        desc = (s.dynamo.description if rid == "dynamo" and s.dynamo
                else s.smg.description if rid == "smg" and s.smg else None)
        opts.pd_router.append(Choice(rid, rname, DISABLED if reason else AVAILABLE, reason, warning,
                                     description=desc))


def _pd_mode(ctx: _Ctx, role: str) -> str:
    """Effective pool mode of ``role``: the selected ``pd.<role>.mode`` or the default, snapped (§2.6)."""
    block = ctx.pd.get(role) if isinstance(ctx.pd, dict) else None
    requested = str(block["mode"]) if isinstance(block, dict) and block.get("mode") else None
    mode = default_pool_mode(ctx.recipe, role, ctx.strategy, ctx.hw_id, ctx.profile, ctx.gpus, requested)
    if mode == "dep" and requested is None and ctx.router == "smg":  # docs/synthesis.md §4.8: SMG turns DEP pools off
        allowed = gates.pool_modes(ctx.recipe, ctx.hw_id, ctx.profile, ctx.gpus)
        mode = next((m for m in ("tep", "tp") if m in allowed), mode)
    return mode
