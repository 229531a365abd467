"""``options(catalog, selection) -> Options``: resolves the context once, then fills every axis from
its row module (hardware, variant, strategy, nodes, PD, KV offload, features, frontend, install,
Advanced) and the banners.
"""

from __future__ import annotations

from typing import Any

from ..defaults import effective_feature_mode
from .advanced import _advanced_row, advanced_overlaps
from .banners import _banners
from .choices import Choice, Options, _sel
from .context import _context
from .features import _feature_rows
from .hardware import _hardware_row
from .install import _install_row
from .kv_offload import _kv_rows
from .pd import _pd_mode, _pd_rows
from .strategy import _nodes_row, _strategy_row
from .variant import _variant_row


def options(catalog: Any, selection: Any, *, detected_profile: str | None = None) -> Options:
    """Every axis with its choices for ``selection`` (docs/constraints.md §3, §3.2; docs/synthesis.md §4, §2.14).

    Args:
        catalog: a loaded :class:`~vllm_deploy_wizard.catalog.loader.Catalog`.
        selection: the Selection (pydantic model, dataclass or dict) with docs/plan-file.md §2 keys
            (``model, variant, hardware, strategy, nodes, features, feature_modes, kv_offload, pd,
            install_mode, frontend``) plus extensions ``gpus, connector, router, detected_profile``.
            Missing values take the §2.14 defaults.
        detected_profile: the auto-detected profile id (overrides ``selection.detected_profile``);
            always offered on the Hardware row, even when restricted.

    Returns:
        :class:`Options`.

    Raises:
        SelectionError: the model is neither a recipe nor a custom model with a readable
            config.json (see :func:`vllm_deploy_wizard.catalog.custom.resolve_model`), or the hardware id
            is unknown (names close matches).
    """
    ctx = _context(catalog, selection, detected_profile)
    opts = Options()
    opts.resolved = {
        "model": ctx.recipe.hf_id, "variant": ctx.variant_key, "hardware": ctx.hw_id,
        "strategy": ctx.strategy_id, "nodes": ctx.nodes, "gpus": ctx.gpus, "kv_offload": ctx.kv,
        "router": ctx.router, "connector": ctx.connector, "install_mode": ctx.install_mode,
        "pd_modes": {}, "feature_modes": {},
    }
    opts.hardware = _hardware_row(ctx)
    opts.variant = _variant_row(ctx)
    if ctx.recipe.is_omni:  # §2.12: no strategy, nodes, KV offload or features rows
        opts.install_mode = _install_row(ctx)
        return opts
    if ctx.strategy is not None and ctx.strategy.deploy_type == "pd_cluster":
        opts.resolved["pd_modes"] = {role: _pd_mode(ctx, role) for role in ("prefill", "decode")}
    requested_modes = _sel(selection, "feature_modes") or {}
    for key, feat in ctx.recipe.features.items():
        mode = effective_feature_mode(key, feat, ctx.variant_key, ctx.variant, ctx.hw_id, ctx.profile,
                                      requested_modes.get(key))
        if mode is not None:
            opts.resolved["feature_modes"][key] = mode
    opts.strategy = _strategy_row(ctx, opts.warnings)
    opts.nodes = _nodes_row(ctx)
    offered = [int(c.id) for c in opts.nodes if c.available and c.id.isdigit()]
    if not _sel(selection, "nodes") and offered and ctx.nodes not in offered:
        opts.resolved["nodes"] = offered[0]  # §3.2 N6: land on a count the row offers (synthesis §2.14)
    _pd_rows(ctx, opts)
    _kv_rows(ctx, opts)
    _feature_rows(ctx, opts)
    opts.frontend = [Choice(fid, f.label or fid) for fid, f in catalog.taxonomy.frontends.items()]
    opts.install_mode = _install_row(ctx)
    opts.advanced = _advanced_row(ctx)
    _banners(ctx, opts)
    opts.warnings += advanced_overlaps(list(_sel(selection, "advanced_args") or []), opts.advanced)
    return opts
