"""The KV Offload row (docs/constraints.md §3.1 K1–K7): taxonomy options and their group sub-rows, and
the merged Mooncake pill with its topology sub-row (M1–M5; :data:`MOONCAKE`, :data:`MOONCAKE_ORDER`).
"""

from __future__ import annotations

from .. import backends, gates
from ..models import KvOffloadOption
from .choices import AVAILABLE, DISABLED, KV_OFF, Choice, Options
from .context import _Ctx
from .strategy import _short

#: Row id of the merged Mooncake pill on the KV Offload row (§2.9: one pill, topologies in a sub-row).
MOONCAKE = "mooncake"
#: Row order of the Mooncake pill among the KV options (§2.9: Off · Simple · Offloading · Mooncake · LMCache).
MOONCAKE_ORDER = 3


def _kv_option_reason(ctx: _Ctx, key: str, opt: KvOffloadOption) -> str | None:
    """Why the taxonomy KV option ``key`` can't compose here (K1–K6 + seed gates), or None."""
    p, name = ctx.profile, opt.display_name or key
    hw_name = p.display_name or ctx.hw_id
    s = ctx.strategy
    is_pd = s is not None and s.deploy_type == "pd_cluster"
    if p.gen == "xpu":  # K1
        return backends.xpu_unvalidated(name)
    if s is not None and s.kv_offload is False:  # docs/synthesis.md §4.6
        return f"{name} can't compose with {_short(s, ctx.strategy_id)}, which takes no KV offload option."
    if is_pd and ctx.router == "smg":  # docs/synthesis.md §4.8
        return f"{name} can't compose with the SMG router, which runs PD without KV offload."
    if is_pd and not (opt.pd and opt.pd.roles):  # K5 (seed pd.roles composes with PD)
        return (f"{name} can't compose with PD cluster, which owns --kv-transfer-config. "
                "(Mooncake composes with PD instead.)")
    if opt.strategies is not None and not is_pd and ctx.strategy_id not in opt.strategies:  # K6
        names = ", ".join(
            (ctx.catalog.strategies[x].display_name if x in ctx.catalog.strategies else x) for x in opt.strategies)
        return f"{name} works with: {names}."
    if opt.brands is not None and p.brand not in opt.brands:  # K4
        return f"{name} needs a CUDA, ROCm or XPU device — not available on {p.brand} {hw_name} backends."
    if gates.gated_off(opt.hardware, ctx.hw_id, p):  # docs/synthesis.md §4.3 hardware gate
        return f"{name} is not supported on {hw_name}."
    if ctx.recipe.kv_offload_support.get(key) == "unsupported":  # K2
        return f"{name} is marked unsupported for this recipe."
    if opt.docker is False and ctx.install_mode == "docker":  # docs/synthesis.md §4.3
        return f"{name} can't run inside the Docker image — switch the install mode to pip."
    return None


def _kv_unverified_reason(ctx: _Ctx, key: str, opt: KvOffloadOption) -> str | None:
    """K3: an opt-in option the recipe has not recorded a verified run for (the one KV gate
    ``allow_unverified`` lifts), or None."""
    support = ctx.recipe.kv_offload_support.get(key)
    if opt.requires_opt_in and support not in ("verified", "unsupported"):
        name = opt.display_name or key
        return (f"{name} is not enabled for this recipe yet. It stays off until the recipe records a "
                "verified run under kv_offload_support.")
    return None


def _mooncake_reason(ctx: _Ctx) -> str | None:
    """Why Mooncake can't compose here (M1–M4 + seed SMG / ``kv_offload: false``), or None."""
    p, name = ctx.profile, ctx.profile.display_name or ctx.hw_id
    s = ctx.strategy
    if p.gen == "xpu":  # M1
        return backends.xpu_unvalidated("Mooncake")
    if p.brand not in ("NVIDIA", "AMD"):  # M2
        return (f"Mooncake's transfer engine ships CUDA and ROCm builds only — not available on "
                f"{p.brand} {name} backends.")
    if not p.scalable:  # M3
        return f"{name} is a single-GPU workstation and can't run a multi-node KV-store deployment."
    stores = ctx.catalog.kv_stores
    if stores and all(
        ctx.recipe.kv_cache_strategy_hardware.get(sid, {}).get(ctx.hw_id) == "unsupported" for sid in stores
    ):  # M4
        return f"Mooncake KV store is not supported on {name}."
    if s is not None and s.kv_offload is False:
        return f"Mooncake can't compose with {_short(s, ctx.strategy_id)}, which takes no KV offload option."
    if s is not None and s.deploy_type == "pd_cluster" and ctx.router == "smg":
        return "Mooncake can't compose with the SMG router, which runs PD without KV offload."
    return None


def _kv_rows(ctx: _Ctx, opts: Options) -> None:
    """KV Offload row (K1–K7), group sub-rows, Mooncake pill and topology sub-row (M1–M5)."""
    tax = ctx.catalog.taxonomy
    pills: list[tuple[float, Choice]] = []
    groups: dict[str, list[Choice]] = {}
    for key, opt in sorted(tax.kv_offload.items(), key=lambda kv: kv[1].order):
        reason = _kv_option_reason(ctx, key, opt)
        soft = None if reason else _kv_unverified_reason(ctx, key, opt)
        label = opt.label or opt.display_name or key
        if soft and ctx.allow_unverified:
            c = Choice(key, label, AVAILABLE, warning=soft, description=opt.description, unverified=True)
        elif soft:
            c = Choice(key, label, DISABLED, soft, description=opt.description, unverified=True)
            reason = soft
        else:
            c = Choice(key, label, DISABLED if reason else AVAILABLE, reason, description=opt.description)
        if opt.group:
            groups.setdefault(opt.group, []).append(c)
        else:
            pills.append((opt.order, c))
        if key == ctx.kv and reason:
            opts.warnings.append(f"KV offload {opt.display_name or key} is off: {reason}")
    for gid, members in groups.items():
        g = tax.kv_offload_groups.get(gid)
        label = (g.label or g.display_name) if g else gid
        open_ = [m for m in members if m.available]
        first = members[0]
        pill = Choice(gid, label, AVAILABLE if open_ else DISABLED, None if open_ else first.reason,  # K7
                      description=g.description if g else None,
                      unverified=any(m.unverified for m in (open_ or members)))
        pills.append((g.order if g else 99, pill))
        opts.kv_offload_members[gid] = members
    if ctx.catalog.kv_stores:
        reason = _mooncake_reason(ctx)
        pills.append((MOONCAKE_ORDER, Choice(MOONCAKE, "Mooncake", DISABLED if reason else AVAILABLE, reason)))
        name = ctx.profile.display_name or ctx.hw_id
        for sid, st in sorted(ctx.catalog.kv_stores.items(), key=lambda kv: kv[1].order):
            topo_reason = reason
            support = ctx.recipe.kv_cache_strategy_hardware.get(sid, {}).get(ctx.hw_id)
            if topo_reason is None and support == "unsupported":
                topo_reason = f"{st.display_name or sid} is not supported on {name}."  # M4 topology pill
            opts.mooncake_topology.append(Choice(sid, st.label or st.display_name or sid,
                                                 DISABLED if topo_reason else AVAILABLE, topo_reason,
                                                 description=st.description))
            if sid == ctx.kv and topo_reason:
                opts.warnings.append(f"KV offload {st.display_name or sid} is off: {topo_reason}")
    pills.sort(key=lambda t: t[0])
    opts.kv_offload = [Choice(KV_OFF, "Off"), *(c for _, c in pills)]
