"""Resolving a :class:`Selection` into a :class:`~vllm_deploy_wizard.catalog.synthesis_context.SynthesisContext`.

:func:`resolve` applies every default of a :class:`Selection` (variant, hardware, strategy, features,
install mode, KV offload, PD pools, connector, router) and looks each catalog object up once; gate
facts land in ``checks`` (docs/plan-file.md §3.7). :func:`did_you_mean` builds the
``unknown KIND 'value'`` error with the closest choices.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from vllm_deploy_wizard.common import suggest
from vllm_deploy_wizard.common.errors import SelectionError
from vllm_deploy_wizard.common.suggest import casefold_key

from . import backends as B
from . import gates as G
from .ascend import UNSUPPORTED_950PR, unsupported_by_backend
from .defaults import offered_by_hardware_match, unlisted_strategy_text
from .loader import Catalog
from .models import KvOffloadOption, PdRoleOverride, Recipe, Strategy, StrategyOverride, Variant
from .selection import PdPool, Selection
from .synthesis_context import PD_ROLES, SynthesisContext, _Pool


def did_you_mean(kind: str, value: str, choices: Iterable[str], where: str,
                  list_all: bool = False) -> SelectionError:
    """``unknown KIND 'value' WHERE.`` with the closest choices, and every choice when there are at
    most 12 or ``list_all`` (hardware profiles: ~36 ids, still the list a person needs to pick)."""
    choices = list(choices)
    hint = suggest.did_you_mean(value, choices, n=3)
    valid = f" Valid: {', '.join(choices)}." if len(choices) <= 12 or list_all else ""
    return SelectionError(f"unknown {kind} {value!r} {where}{hint}.{valid}")




def recipe_file(cat: Catalog, recipe: Recipe) -> str:
    """Where ``recipe`` was read from, for messages: ``<checkout>/models/<org>/<repo>.yaml`` for a
    recipes checkout (exact or layered over the bundled catalog, when that file exists), else the
    bundled catalog's ``recipes.json`` entry."""
    from pathlib import Path

    root = cat.source.removeprefix("bundled+") if cat.source != "bundled" else ""
    if root:
        path = Path(root) / "models" / recipe.hf_org / f"{recipe.hf_repo}.yaml"
        if path.is_file() or not cat.source.startswith("bundled+"):
            return str(path)
    return f"bundled recipes.json (recipes.{recipe.hf_id})"


def no_model_id(cat: Catalog, recipe: Recipe, variant_key: str) -> SelectionError:
    """The error for a recipe that names no checkpoint for ``variant_key``: neither
    ``variants.<key>.model_id`` nor ``model.model_id`` is set (e.g. the ``model:`` key misspelled).
    The reference builder would render ``vllm serve unknown`` (docs/synthesis.md §2), so plan refuses; a
    SelectionError (exit 2) so every caller that handles an unplannable selection (the wizard's review,
    device-fit hints) handles this one too."""
    return SelectionError(
        f"{recipe_file(cat, recipe)}: recipe {recipe.hf_id} has no `model.model_id` (and `variants.{variant_key}` "
        "sets no `model_id`) — plan can't name the checkpoint to serve; add `model_id: <org>/<repo>` under `model:` "
        "(`vllm-wizard catalog check` lists every such recipe)")


def _default_features(recipe: Recipe, variant: Variant, hw: str) -> list[str]:
    """Default-on features (§2.8): all − opt-in − hardware opt-in + variant ``default_modes`` keys."""
    off = set(recipe.opt_in_features) | set(recipe.hardware_opt_in_features.get(hw, []))
    forced = set(variant.default_modes)
    return [k for k in recipe.features if k not in off or k in forced]


def _kv_option_gates(ctx: SynthesisContext, key: str, opt: KvOffloadOption) -> dict[str, bool]:
    """K2–K6 facts for a taxonomy option (docs/plan-file.md §3.7) — seed gates folded in."""
    st = ctx.strategy
    deploy = ctx.deploy
    allowed = deploy not in ("pd_cluster", "kv_store_lb") or (deploy == "pd_cluster" and bool(opt.pd and opt.pd.roles))
    if opt.strategies is not None and ctx.strategy_id not in opt.strategies and deploy != "pd_cluster":
        allowed = False
    if st is not None and st.kv_offload is False:
        allowed = False
    support = ctx.recipe.kv_offload_support.get(key)
    unverified = opt.requires_opt_in and support not in ("verified", "unsupported")
    supported = support != "unsupported" and (not opt.requires_opt_in or support == "verified"
                                              or (unverified and ctx.sel.allow_unverified))
    brand_ok = opt.brands is None or ctx.brand in opt.brands
    return {"kv_allowed_for_strategy": allowed, "kv_supported_for_recipe": supported, "kv_brand_ok": brand_ok}


def resolve(cat: Catalog, sel: Selection) -> SynthesisContext:
    """Resolve ``sel`` over ``cat`` into a :class:`SynthesisContext`; raises SelectionError (see synthesize)."""
    recipe, alias_variant = cat.resolve_model(sel.model)
    variant_key = casefold_key(sel.variant, recipe.variants) or alias_variant or "default"
    if variant_key not in recipe.variants:
        raise did_you_mean("variant", variant_key, recipe.variants, f"for {recipe.hf_id}")
    variant = recipe.variants[variant_key]
    profiles = cat.taxonomy.hardware_profiles
    hw = casefold_key(sel.hardware, profiles) or G.default_hardware(recipe, variant, profiles)
    if hw not in profiles:
        raise did_you_mean("hardware profile", hw, profiles, f"in the {cat.source} catalog", list_all=True)
    profile = profiles[hw]
    gpu_count = sel.gpus or profile.gpu_count
    nodes = sel.nodes or 1
    omni = recipe.is_omni
    if not omni and not recipe.served_model_id(variant):  # an omni task may name its own (omni.py)
        raise no_model_id(cat, recipe, variant_key)
    strategy_id: str | None = None
    strategy: Strategy | None = None
    so: StrategyOverride | None = None
    if not omni:
        strategy_id = sel.strategy or G.reference_strategy(recipe, nodes)
        if strategy_id in cat.kv_stores:
            raise SelectionError(f"strategy {strategy_id!r} is a KV-store deployment; pass it as kv_offload")
        strategy = cat.strategies.get(strategy_id)
        if strategy is None:
            raise did_you_mean("strategy", strategy_id, cat.strategies, f"in the {cat.source} catalog")
        so = recipe.strategy_overrides.get(strategy_id)
    if omni:
        features: list[str] = []
    elif sel.features is None or sel.features == "default":
        features = _default_features(recipe, variant, hw)
    elif sel.features == "none":
        features = []
    else:
        features = list(sel.features)
    install_mode = B.resolve_install_mode(recipe, profile, sel.install_mode)
    kv_key = sel.kv_offload if sel.kv_offload not in (None, "none", "off") else None
    if sel.frontend and sel.frontend not in cat.taxonomy.frontends:
        raise did_you_mean("frontend", sel.frontend, cat.taxonomy.frontends or ["(none in this catalog)"],
                            f"in the {cat.source} catalog")
    ctx = SynthesisContext(cat=cat, sel=sel, recipe=recipe, variant_key=variant_key, variant=variant, hw=hw,
               profile=profile, gpu_count=gpu_count, nodes=nodes, strategy_id=strategy_id,
               strategy=strategy, so=so, features=features, install_mode=install_mode, kv_key=kv_key)
    ctx.checks = _checks(ctx, omni)
    if unsupported_by_backend(profile):  # docs/backends.md §3: the hardware row refuses it unless allowed
        ctx.checks["backend_supports_hardware"] = False
        if sel.allow_unverified:
            ctx.unverified.append(f"hardware {profile.display_name or hw} ({hw}): {UNSUPPORTED_950PR}")
    # strategy and strategy_id are set exactly when the recipe is not omni (looked up above)
    if (strategy is not None and strategy_id is not None
            and offered_by_hardware_match(recipe, strategy_id, strategy, gpu_count, nodes)):
        ctx.checks["strategy_offered_by_hardware_match"] = True  # docs/constraints.md §3.2
        if sel.allow_unverified:
            ctx.unverified.append(unlisted_strategy_text(recipe, strategy, strategy_id))
    if sel.allow_unverified and ctx.checks.get("restricted_hidden"):
        ctx.unverified.append(f"hardware {profile.display_name or hw} ({hw}): restricted profile "
                              f"{recipe.hf_id} does not list (rule H1)")
    if not omni and kv_key is not None:
        if kv_key in cat.taxonomy.kv_offload:
            opt = cat.taxonomy.kv_offload[kv_key]
            facts = _kv_option_gates(ctx, kv_key, opt)
            ctx.checks.update(facts)
            if opt.hardware:  # docs/synthesis.md §4.3 gate
                ctx.checks["kv_hardware_ok"] = not G.gated_off(opt.hardware, hw, profile)
            if opt.docker is False:  # docs/synthesis.md §4.3: unavailable in docker mode
                ctx.checks["kv_docker_ok"] = install_mode != "docker"
            usable = (all(facts.values()) and ctx.checks.get("kv_hardware_ok", True)
                      and ctx.checks.get("kv_docker_ok", True))
            if usable:
                ctx.kv_option = opt
                if opt.requires_opt_in and recipe.kv_offload_support.get(kv_key) != "verified":
                    ctx.unverified.append(f"KV offload {opt.display_name or kv_key}: no verified run recorded "
                                          f"for {recipe.hf_id} (kv_offload_support.{kv_key}, rule K3)")
        elif kv_key in cat.kv_stores:
            store = cat.kv_stores[kv_key]
            ctx.checks["kv_store_brand_ok"] = profile.brand in ("NVIDIA", "AMD")
            per_hw = recipe.kv_cache_strategy_hardware.get(kv_key) or {}
            ctx.checks["kv_store_not_opted_out"] = per_hw.get(hw) != "unsupported"
            if strategy is not None and strategy.kv_offload is False:
                raise SelectionError(f"strategy {strategy_id!r} does not compose with KV offload "
                                     f"(it owns the engine's KV layout); drop kv_offload {kv_key!r}")
            ctx.kv_store = store
            if not ctx.is_pd:
                count = sel.kv_instances.count if sel.kv_instances else (store.default_instances or 2)
                ctx.kv_count = min(16, max(1, count))
        else:
            ctx.checks["kv_offload_unknown"] = True
    if ctx.is_pd:
        _resolve_pd(ctx)
    return ctx


def _checks(ctx: SynthesisContext, omni: bool) -> dict[str, Any]:
    r, v, p, hw = ctx.recipe, ctx.variant, ctx.profile, ctx.hw
    node_vram = (p.vram_per_device_gb or 0) * ctx.gpu_count if p.vram_gb else None
    checks: dict[str, Any] = {
        "precision_ok": G.precision_compatible(p, v),
        "hw_not_unsupported": r.meta.hardware.get(hw) != "unsupported",
        "variant_hw_allowed": G.variant_hw_allowed(v, hw),
        "restricted_hidden": G.restricted_hidden(r, hw, p),
        "scalable": p.scalable is not False,
        "fits_single_node": v.vram_minimum_gb is None or node_vram is None or v.vram_minimum_gb <= node_vram,
    }
    if omni:
        return checks
    sid = ctx.strategy_id or ""
    scales_out = ctx.deploy in ("multi_node", "pd_cluster")
    checks["strategy_offered"] = sid in G.offered_strategies(r)
    checks["strategy_supported_on_hw"] = G.strategy_supported_on_hw(r, sid, hw, p)
    checks["strategy_reachable"] = G.reachable(r, sid, hw, ctx.gpu_count, scales_out)
    checks["strategy_min_nodes"] = G.nodes_for(r, sid, hw, ctx.gpu_count)
    checks["single_node_tp"] = G.single_node_tp(r, v, sid, hw, p, ctx.gpu_count)
    skipped = [k for k in ctx.features
               if (feat := r.features.get(k)) is not None and feat.strategies is not None
               and sid not in feat.strategies]
    if skipped:
        checks["features_skipped_by_strategy"] = skipped
    return checks


def _resolve_pd(ctx: SynthesisContext) -> None:
    """PD pools (§2.6 PD role, §2.14) and seed connector / router choice (§4.7–4.8)."""
    allowed = G.pool_modes(ctx.recipe, ctx.hw, ctx.profile, ctx.gpu_count)
    strategy = ctx.serving_strategy
    sel_pd = ctx.sel.pd
    for role in PD_ROLES:
        pool_sel: PdPool | None = getattr(sel_pd, role) if sel_pd is not None else None
        if pool_sel is not None and pool_sel.nodes is not None:
            nodes = pool_sel.nodes
        else:
            nodes = 1 if ctx.nodes > 1 else 0
        pool_gpus = ctx.gpu_count // 2 if nodes == 0 else nodes * ctx.gpu_count
        so_role = ctx.so.role(role) if ctx.so else PdRoleOverride()
        st_role = strategy.role(role)
        raw = (pool_sel.mode if pool_sel else None) or so_role.parallelism or st_role.parallelism or "tp"
        mode = raw if raw in allowed else allowed[0]
        tp = so_role.tp if so_role.tp is not None else st_role.tp
        dp_local = max(1, ctx.gpu_count // (tp or 1))
        ctx.pools[role] = _Pool(role, nodes, pool_gpus, mode, raw, tp, dp_local)
    if strategy.connectors:
        cid = ctx.sel.connector or next((k for k, c in strategy.connectors.items() if c.default),
                                        next(iter(strategy.connectors)))
        if cid not in strategy.connectors:
            raise did_you_mean("connector", cid, strategy.connectors, "for pd_cluster")
        conn = strategy.connectors[cid]
        if conn.brands is not None and ctx.brand not in conn.brands:
            raise SelectionError(f"connector {cid!r} needs {' or '.join(conn.brands)} hardware; "
                                 f"{ctx.hw} is {ctx.brand}")
        ctx.connector_id, ctx.connector = cid, conn
    elif ctx.sel.connector:
        raise SelectionError(f"connector {ctx.sel.connector!r}: the {ctx.cat.source} catalog's pd_cluster "
                             "declares no connectors (its role args carry --kv-transfer-config)")
    routers = ["vllm"] + [r for r in ("smg", "dynamo") if getattr(strategy, r) is not None]
    router = ctx.sel.router or "vllm"
    if router not in routers:
        raise did_you_mean("router", router, routers, "for pd_cluster")
    if ctx.connector is not None and ctx.connector.routers is not None and router not in ctx.connector.routers:
        raise SelectionError(f"--router {router!r} does not work with --connector {ctx.connector_id!r} "
                             f"(works with: {', '.join(ctx.connector.routers)}): pick one of those with --router, "
                             "or another --connector")
    if ctx.connector is not None and ctx.connector.routers is None and router != "vllm":
        raise SelectionError(f"--connector {ctx.connector_id!r} works with the vllm router only, not --router "
                             f"{router!r}: use --router vllm, or another --connector")
    dynamo = strategy.dynamo  # not None when router is "dynamo" (routers above)
    if router == "dynamo" and dynamo is not None and dynamo.brands and ctx.brand not in dynamo.brands:
        raise SelectionError(f"router 'dynamo' needs {' or '.join(dynamo.brands)} hardware")
    if router == "smg" and any(p.mode == "dep" for p in ctx.pools.values()):
        raise SelectionError("router 'smg' supports TP/TEP pools only; pick --pd-prefill/--pd-decode mode tp or tep")
    if router == "smg" and (ctx.kv_store is not None or ctx.kv_option is not None):
        raise SelectionError("router 'smg' does not support KV offload; set kv_offload to none")
    ctx.router = router
