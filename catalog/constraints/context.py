"""What the rules read, resolved once per :func:`~vllm_deploy_wizard.catalog.constraints.options` call:
``_Ctx`` and ``_context`` (the selection with the §2.14 defaults applied: recipe, variant, hardware,
devices and nodes, strategy, KV offload, PD, connector, router, effective install mode).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vllm_deploy_wizard.common.contract import MAX_NODES
from vllm_deploy_wizard.common.errors import SelectionError

from .. import backends, gates
from ..defaults import (  # §2.14 defaults and the facts they rest on live with the planner
    default_nodes,
    node_vram,
    pick_default_hardware,
    recommend_strategy,
    variant_runs_on,
)
from ..models import HardwareProfile, Recipe, Strategy, Variant
from .choices import KV_OFF, _sel


@dataclass
class _Ctx:
    """Everything the rules read, resolved once per call."""

    catalog: Any
    recipe: Recipe
    variant_key: str
    variant: Variant
    hw_id: str
    profile: HardwareProfile
    gpus: int
    node_vram: float | None
    nodes: int
    strategy_id: str
    strategy: Strategy | None
    kv: str
    router: str
    connector: str | None
    install_mode: str
    detected: str | None
    pd: dict[str, Any]
    features: list[str]
    allow_unverified: bool = False
    advanced_args: tuple[str, ...] = ()
    """The person's own serve arguments (last wins in the plan; the device-fit rule reads them)."""


def _context(catalog: Any, selection: Any, detected_profile: str | None) -> _Ctx:
    model = _sel(selection, "model")
    if not model:
        raise SelectionError("selection: `model` is required (a recipe hf id or a local model directory)")
    from ..custom import resolve_model

    recipe = resolve_model(catalog, str(model))
    variant_key = _sel(selection, "variant")
    landing_variant = False
    if variant_key is None:
        try:
            alias = catalog.resolve_model(str(model))[1]
        except Exception:  # custom models are not in the index
            alias = None
        variant_key = alias or "default"
        landing_variant = alias is None
    variant = recipe.variant(variant_key)
    detected = detected_profile or _sel(selection, "detected_profile")
    profiles = catalog.taxonomy.hardware_profiles
    hw_id = _sel(selection, "hardware") or detected or pick_default_hardware(catalog, recipe, variant_key)
    profile = profiles.get(hw_id)
    if profile is None:
        from vllm_deploy_wizard.common.suggest import did_you_mean

        hint = did_you_mean(str(hw_id), profiles, n=3)
        raise SelectionError(f"selection: hardware {hw_id!r} is not a profile of the catalog{hint}.")
    if landing_variant and not recipe.is_omni and not variant_runs_on(recipe, variant, hw_id, profile):
        # landing on hardware the default variant can't run on: the variant a hardware pick
        # switches to (H4), the largest one that runs there
        runnable = [k for k, v in recipe.variants.items() if variant_runs_on(recipe, v, hw_id, profile)]
        if runnable:
            variant_key = max(runnable, key=lambda k: recipe.variants[k].vram_minimum_gb or 0)
            variant = recipe.variants[variant_key]
    gpus = int(_sel(selection, "gpus") or profile.gpu_count or 1)
    nodes = int(_sel(selection, "nodes") or default_nodes(catalog, recipe, variant_key, hw_id, gpus))
    sid = _sel(selection, "strategy") or recommend_strategy(catalog, recipe, hw_id, nodes, gpus)
    picked = catalog.strategies.get(_sel(selection, "strategy") or "")
    if not _sel(selection, "nodes") and picked is not None and picked.deploy_type == "multi_node":
        # a multi-node strategy picked without a node count lands on its floor, at least 2 (§2.14)
        floor = gates.nodes_for(recipe, str(_sel(selection, "strategy")), hw_id, gpus)
        nodes = max(nodes, 2, floor if floor <= MAX_NODES else 2)
    kv = _sel(selection, "kv_offload") or KV_OFF
    pd = _sel(selection, "pd") or {}
    if not isinstance(pd, dict):
        pd = pd.model_dump() if hasattr(pd, "model_dump") else dict(vars(pd))
    strategy = catalog.strategies.get(sid)
    connector = _sel(selection, "connector")
    if connector is None and strategy is not None and strategy.connectors:
        connector = next((c for c, v in strategy.connectors.items() if v.default), next(iter(strategy.connectors)))
    return _Ctx(
        catalog=catalog, recipe=recipe, variant_key=variant_key, variant=variant, hw_id=hw_id,
        profile=profile, gpus=gpus, node_vram=node_vram(profile, gpus), nodes=nodes,
        strategy_id=sid, strategy=strategy, kv=kv, router=_sel(selection, "router") or "vllm",
        connector=connector, install_mode=_effective_install(recipe, profile, _sel(selection, "install_mode")),
        detected=detected, pd=pd,
        features=_feature_list(_sel(selection, "features")),
        allow_unverified=bool(_sel(selection, "allow_unverified")),
        advanced_args=tuple(str(a) for a in (_sel(selection, "advanced_args") or [])),
    )


def _feature_list(value: Any) -> list[str]:
    """The explicitly selected features (``"default"``/``"none"``/None → ``[]``: nothing to check)."""
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []


def _effective_install(recipe: Recipe, profile: HardwareProfile, requested: str | None) -> str:
    """Effective install mode (docs/plan-file.md §2 ``install_mode``; docs/synthesis.md §2.10;
    docs/constraints.md §3.1 I1): the one rule synthesis uses."""
    return backends.resolve_install_mode(recipe, profile, requested)
