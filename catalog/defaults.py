"""The §2.14 defaults (docs/synthesis.md §2.14): the values a selection resolves to where the
person gave none — default hardware, recommended strategy, node counts, PD pool sizes and modes,
feature modes — and the facts they rest on (precision fit, scale-out, node VRAM).

Below both the planner and the option rows (:mod:`.constraints`, which are computed against these
defaults); the facts themselves live in :mod:`.gates`.
"""

from __future__ import annotations

import math
from typing import Any

from . import gates
from .models import HardwareProfile, Recipe, Strategy, Variant


def precision_ok_on(variant: Variant, profile: HardwareProfile | None) -> bool:
    """P1 (docs/constraints.md §3.1): see :func:`.gates.precision_compatible`; False for an unknown profile."""
    return profile is not None and gates.precision_compatible(profile, variant)


def fits_unscalable(variant: Variant, profile: HardwareProfile, vram: float | None) -> bool:
    """V3: on ``scalable: false`` hardware the variant must fit the node's VRAM."""
    if profile.scalable:
        return True
    need = variant.vram_minimum_gb
    return need is None or vram is None or need <= vram


def variant_runs_on(recipe: Recipe, variant: Variant, hw_id: str, profile: HardwareProfile,
                    vram: float | None = None) -> bool:
    """Not ``unsupported`` + P1 precision + ``supported_hardware`` allowlist + non-scalable fit (H3/V1)."""
    if recipe.meta.hardware.get(hw_id) == "unsupported":
        return False
    if not gates.variant_hw_allowed(variant, hw_id) or not gates.precision_compatible(profile, variant):
        return False
    return fits_unscalable(variant, profile, profile.vram_gb if vram is None else vram)


def pick_default_hardware(catalog: Any, recipe: Recipe, variant_key: str | None = "default") -> str:
    """``pickDefaultHardware`` (docs/synthesis.md §2.14) for a variant key → profile id.

    Delegates to :func:`.gates.default_hardware` (the same function synthesis uses).
    """
    return gates.default_hardware(recipe, recipe.variant(variant_key), catalog.taxonomy.hardware_profiles)


def recommend_strategy(catalog: Any, recipe: Recipe, hw_id: str, nodes: int = 1,
                       gpus: int | None = None) -> str:
    """Recommended strategy (§2.14) as the wizard lands on it.

    ``recommendStrategy`` of :mod:`.gates` (what ``plan`` uses when no strategy is given); when that
    pick is unsupported (S5), unreachable (S4) or disabled by §3.2 ``hardware_match`` (MoE-only on a
    dense model; TEP/DEP below ``min_gpus`` on ``gpus`` devices — e.g. a 1-NUMA-node CPU box) on
    ``hw_id``, the first listed strategy that is usable ([UI] fallback of §2.14); else the reference
    pick unchanged (so the row never lands on a disabled strategy).
    """
    pick = gates.reference_strategy(recipe, nodes)
    profile = catalog.taxonomy.hardware_profiles.get(hw_id)
    if profile is None:
        return pick
    n = gpus or profile.gpu_count or 1

    is_moe = (recipe.model.architecture or "").lower() == "moe"

    def match_ok(s: Any, sid: str) -> bool:
        """§3.2 hardware_match as the strategy row disables it: MoE-only on a dense model, or an
        expert-parallel strategy below its min_gpus on the devices at hand."""
        hm = getattr(s, "hardware_match", None)
        if s is None or hm is None:
            return True
        if (hm.architecture or "").lower() == "moe" and not is_moe:
            return False
        total = n * (max(nodes, 1) if s.deploy_type != "single_node" else 1)
        expert = sid.endswith(("tep", "dep")) or s.parallelism == "dpa_tp"
        return not (hm.min_gpus and expert and total < hm.min_gpus)

    def usable(sid: str) -> bool:
        s = catalog.strategies.get(sid)
        return (gates.strategy_supported_on_hw(recipe, sid, hw_id, profile)
                and gates.reachable(recipe, sid, hw_id, n, scales_out(s))
                and not (s is not None and hidden_by_nodes(s, nodes))
                and match_ok(s, sid))

    if usable(pick):
        return pick
    return next((sid for sid in gates.offered_strategies(recipe) if usable(sid)), pick)


def default_nodes(catalog: Any, recipe: Recipe, variant_key: str | None, hw_id: str,
                  gpus: int | None = None) -> int:
    """Landing node count (§2.14): 1, or 2 when the variant doesn't fit one node, the recipe has a
    multi-node/PD strategy and the hardware is scalable and not XPU."""
    profile = catalog.taxonomy.hardware_profiles.get(hw_id)
    if profile is None:
        return 1
    need = recipe.variant(variant_key).vram_minimum_gb
    have = node_vram(profile, gpus)
    if need is None or have is None or need <= have:
        return 1
    if not profile.scalable or profile.gen == "xpu":
        return 1
    return 2 if has_multi_node(catalog, recipe) else 1


def default_pool_nodes(recipe: Recipe, role: str, variant_key: str | None, hw_id: str,
                       profile: HardwareProfile, gpus: int | None = None) -> int:
    """PD pool size (§2.14): ``so.pd_cluster.<role>.nodes`` (number or ``{hw_id|default}``) else
    ``max(1, ceil(vram_minimum_gb / node vram))``; clamped to 1..16 and grown to the pool mode's floor."""
    so = recipe.strategy_overrides.get("pd_cluster")
    nodes: int | None = None
    if so is not None:
        given = so.role(role).nodes
        if isinstance(given, dict):
            given = given.get(hw_id, given.get("default"))
        if isinstance(given, (int, float)):
            nodes = int(given)
    n = gpus or profile.gpu_count or 1
    if nodes is None:
        need = recipe.variant(variant_key).vram_minimum_gb
        have = node_vram(profile, gpus)
        nodes = max(1, math.ceil(need / have)) if need and have else 1
    mode = default_pool_mode(recipe, role, None, hw_id, profile, gpus)
    floor = gates.nodes_for(recipe, mode, hw_id, n)
    return min(gates.MAX_NODES, max(1, nodes, floor))


def default_pool_mode(recipe: Recipe, role: str, strategy: Strategy | None, hw_id: str,
                      profile: HardwareProfile, gpus: int | None = None, requested: str | None = None) -> str:
    """Effective PD pool mode of ``role`` (``"tp"|"tep"|"dep"``), as synthesis resolves it (§2.6
    PD role, §2.14): the ``requested`` mode (selection ``pd.<role>.mode``) → ``so.pd_cluster.<role>
    .parallelism`` → strategy role ``parallelism`` → ``tp``, snapped to the first allowed mode of
    :func:`.gates.pool_modes` when not allowed. ``requested=None`` gives the landing default."""
    allowed = gates.pool_modes(recipe, hw_id, profile, gpus or profile.gpu_count or 1)
    so = recipe.strategy_overrides.get("pd_cluster")
    mode = requested or (so.role(role).parallelism if so else None) or (
        strategy.role(role).parallelism if strategy is not None else None) or "tp"
    return mode if mode in allowed else allowed[0]


def effective_feature_mode(key: str, feature: Any, variant_key: str, variant: Variant, hw_id: str,
                           profile: HardwareProfile, requested: str | None = None) -> str | None:
    """``resolveModeKey`` (docs/synthesis.md §2.8) → the mode key feature ``key`` runs with, or ``None``
    when it has no modes (or none is open here).

    Candidates are the modes whose ``variants`` list is empty or names ``variant_key`` (F4) and
    that :func:`.gates.gated_off` does not turn off on ``hw_id`` (F3); the pick is the first of
    ``requested`` (selection ``feature_modes``), ``variant.default_modes``, the feature's
    ``default_mode`` that is a candidate, else the first candidate. Same order as synthesis'
    ``SynthesisContext.effective_mode`` (:mod:`.resolution`; a method of the resolved context, hence
    mirrored here; a parity test in tests/catalog/test_constraints.py pins them together)."""
    if not feature.modes:
        return None
    cands = [m for m, mode in feature.modes.items()
             if (not mode.variants or variant_key in mode.variants)
             and not gates.gated_off(mode.hardware, hw_id, profile)]
    if not cands:
        return None
    for pick in (requested, variant.default_modes.get(key), feature.default_mode):
        if pick in cands:
            return pick
    return cands[0]


def scales_out(strategy: Strategy | None) -> bool:
    return strategy is not None and strategy.deploy_type in ("multi_node", "pd_cluster")


def hidden_by_nodes(s: Strategy, nodes: int) -> bool:
    """S2: 1 node hides multi_node_*; more nodes hide single_node_* (pd_cluster shows at both)."""
    return (nodes <= 1 and s.deploy_type == "multi_node") or (nodes > 1 and s.deploy_type == "single_node")


def node_vram(profile: HardwareProfile | None, gpus: int | None) -> float | None:
    """Node VRAM in GB: devices × per-device VRAM (per-device stays the profile's)."""
    if profile is None or not profile.vram_gb:
        return None
    if gpus and profile.gpu_count and gpus != profile.gpu_count:
        return profile.vram_gb / profile.gpu_count * gpus
    return profile.vram_gb


def has_multi_node(catalog: Any, recipe: Recipe) -> bool:
    """N1: the recipe offers some multi_node_* or pd_cluster strategy."""
    for sid in gates.offered_strategies(recipe):
        s = catalog.strategies.get(sid)
        dt = s.deploy_type if s is not None else ("multi_node" if sid.startswith("multi_node") else sid)
        if dt in ("multi_node", "pd_cluster"):
            return True
    return False


#: Strategies offered by their ``hardware_match`` alone, to recipes that do not list them
#: (docs/constraints.md §3.2): the seed DPA+TP strategy, written for every MoE model.
MATCH_OFFERED_PARALLELISM = frozenset({"dpa_tp"})


def offered_by_hardware_match(recipe: Recipe, sid: str, strategy: Strategy | None, gpus: int,
                              nodes: int = 1) -> bool:
    """True when ``sid`` is offered to ``recipe`` only through its ``hardware_match`` (docs/constraints.md
    §3.2): a strategy of :data:`MATCH_OFFERED_PARALLELISM` the recipe does not list, whose match is
    MoE-only and the model is MoE, on ``gpus`` devices within ``min_gpus``..``max_gpus`` of one node
    (``multi_node: false``). Such a plan has no verified run: it needs ``allow_unverified`` and is
    marked unverified."""
    if strategy is None or strategy.parallelism not in MATCH_OFFERED_PARALLELISM:
        return False
    if sid in gates.offered_strategies(recipe) or sid in recipe.strategy_hardware:
        return False
    hm = strategy.hardware_match
    if hm is None or (hm.architecture or "").lower() != "moe":
        return False
    if (recipe.model.architecture or "").lower() != "moe":
        return False
    if hm.multi_node is False and nodes > 1:
        return False
    return (not hm.min_gpus or gpus >= hm.min_gpus) and (not hm.max_gpus or gpus <= hm.max_gpus)


def unlisted_strategy_text(recipe: Recipe, strategy: Strategy, sid: str) -> str:
    """Why a :func:`offered_by_hardware_match` strategy is unverified (rule S3, docs/constraints.md §3.2)."""
    label = strategy.short_label or strategy.display_name or sid
    return (f"strategy {label} ({sid}): {recipe.hf_id} does not list it; offered to MoE models by its "
            "hardware_match, with no verified run for this recipe (rule S3)")
