"""Hardware-keyed lookups and the reference's gate facts and defaults.

Everything here is a pure function of (recipe, variant, profile, strategy) and follows
``docs/synthesis.md``: the three lookup styles of §2.1, single-node TP (§2.2), GPU
floors (§2.3), precision (§3.1 P1), strategy gates (S3–S5), default hardware and recommended
strategy (§2.14). Synthesis uses them for the plan and its ``checks`` (docs/plan-file.md §3.7); the
constraints API (``options``) can reuse them so the two never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeVar

from vllm_deploy_wizard.common.contract import MAX_NODES

from .models import HardwareProfile, Recipe, Variant

T = TypeVar("T")

#: Precisions that need NVIDIA Blackwell unless the variant says otherwise (P1).
BLACKWELL_PRECISIONS = ("nvfp4", "fp4")


# ---------------------------------------------------------------------------------------------
# §2.1 lookups


def keyed(mapping: Mapping[str, T] | None, hw_id: str, profile: HardwareProfile) -> T | None:
    """Exact id > generation > brand (lower-cased) > ``default`` (§2.1, first lookup style)."""
    if not mapping:
        return None
    for key in (hw_id, profile.gen, profile.brand.lower(), "default"):
        if key in mapping:
            return mapping[key]
    return None


def gen_block(mapping: Mapping[str, T] | None, profile: HardwareProfile) -> T | None:
    """Generation key, else ``nvidia`` when the brand is NVIDIA (§2.1, second lookup style)."""
    if not mapping:
        return None
    block = mapping.get(profile.gen)
    if block is None and profile.brand == "NVIDIA":
        block = mapping.get("nvidia")
    return block


def gated_off(gate: Mapping[str, str] | None, hw_id: str, profile: HardwareProfile) -> bool:
    """``unsupported`` under the generation key or the exact id (§2.1, mode / kv_offload gate)."""
    if not gate:
        return False
    return gate.get(profile.gen) == "unsupported" or gate.get(hw_id) == "unsupported"


# ---------------------------------------------------------------------------------------------
# precision and hardware facts


def precision_compatible(profile: HardwareProfile, variant: Variant) -> bool:
    """``isPrecisionCompatible`` (P1): ``precision_hardware`` replaces the default constraint;
    nvfp4/fp4 otherwise need NVIDIA Blackwell; other precisions are unconstrained."""
    constraint: Mapping[str, Any] | None = variant.precision_hardware
    if constraint is None:
        if variant.precision.lower() not in BLACKWELL_PRECISIONS:
            return True
        constraint = {"brand": "NVIDIA", "generation": "blackwell"}
    brand = constraint.get("brand")
    if brand and str(brand).lower() != profile.brand.lower():
        return False
    gen = constraint.get("generation")
    if gen:
        gens = gen if isinstance(gen, list) else [gen]
        if profile.gen not in gens:
            return False
    return True


def demands_blackwell(variant: Variant) -> bool:
    """True when the precision constraint requires the blackwell generation (§2.14)."""
    constraint = variant.precision_hardware
    if constraint is None:
        return variant.precision.lower() in BLACKWELL_PRECISIONS
    gen = constraint.get("generation")
    return gen == "blackwell" or (isinstance(gen, list) and gen == ["blackwell"])


def variant_hw_allowed(variant: Variant, hw_id: str) -> bool:
    """Variant ``supported_hardware`` empty/absent or containing ``hw_id``."""
    return not variant.supported_hardware or hw_id in variant.supported_hardware


def restricted_hidden(recipe: Recipe, hw_id: str, profile: HardwareProfile) -> bool:
    """H1: a ``restricted`` profile not listed (any value) in ``meta.hardware``."""
    return profile.restricted and hw_id not in recipe.meta.hardware


def unlisted_restricted_text(recipe: Recipe, label: str) -> str:
    """The H1 sentence for a restricted profile ``label`` that ``recipe`` does not list (shown when
    it is planned anyway, e.g. because it was detected). A custom model (:attr:`Recipe.is_custom`)
    has no recipe to list it, so the sentence says so instead of "this recipe" (§3.1 H1)."""
    if recipe.is_custom:
        return f"{label} is a restricted profile not verified for custom models like this one (rule H1)"
    return f"{label} is a restricted profile this recipe does not list (rule H1)"


def hw_candidate(recipe: Recipe, variant: Variant, hw_id: str, profile: HardwareProfile) -> bool:
    """Filters of ``pickDefaultHardware`` (§2.14)."""
    return (precision_compatible(profile, variant)
            and recipe.meta.hardware.get(hw_id) != "unsupported"
            and variant_hw_allowed(variant, hw_id)
            and not restricted_hidden(recipe, hw_id, profile))


_BRAND_RANK = {"NVIDIA": 0, "AMD": 1}


def default_hardware(recipe: Recipe, variant: Variant, profiles: Mapping[str, HardwareProfile]) -> str:
    """``pickDefaultHardware`` (§2.14, docs/plan-file.md §2)."""
    cands = [hw for hw, p in profiles.items() if hw_candidate(recipe, variant, hw, p)]
    if recipe.meta.default_hardware in cands:
        return recipe.meta.default_hardware
    if demands_blackwell(variant):
        for hw in ("b200", "gb200"):
            if hw in cands:
                return hw
    elif "h200" in cands:
        return "h200"
    if cands:
        return sorted(cands, key=lambda hw: (_BRAND_RANK.get(profiles[hw].brand, 2), hw))[0]
    return "h200"


# ---------------------------------------------------------------------------------------------
# strategies


def offered_strategies(recipe: Recipe) -> list[str]:
    """``effectiveCompatibleStrategies`` (S3): listed strategies + those granted ``supported``."""
    out = list(recipe.compatible_strategies)
    for strategy, per_hw in recipe.strategy_hardware.items():
        if strategy not in out and "supported" in per_hw.values():
            out.append(strategy)
    return out


def strategy_supported_on_hw(recipe: Recipe, strategy: str, hw_id: str, profile: HardwareProfile) -> bool:
    """``isStrategySupportedOnHardware`` (S5): keyed ``strategy_hardware`` value; ``unsupported``
    fails, and an absent value fails for strategies the recipe does not list."""
    value = keyed(recipe.strategy_hardware.get(strategy), hw_id, profile)
    if value == "unsupported":
        return False
    if value is None:
        return strategy in recipe.compatible_strategies
    return True


def _block(value: Any, key: str) -> int:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, dict):
        for k in (key, f"multi_node_{key}", f"single_node_{key}"):
            if k in value:
                v = value[k]
                return int(v) if isinstance(v, (int, float)) else 0
    return 0


def min_gpus(recipe: Recipe, key: str, hw_id: str) -> int:
    """``minGpus`` (§2.3): strategy id or PD pool mode → GPU floor on ``hw_id`` (0 = none)."""
    spec = recipe.strategy_min_gpus
    if spec is None:
        return 0
    if isinstance(spec, (int, float)):
        return int(spec)
    return max(_block(spec, key), _block(spec.get(hw_id), key))


def nodes_for(recipe: Recipe, key: str, hw_id: str, gpu_count: int) -> int:
    """``nodesForStrategy`` (§2.3): ``ceil(minGpus / (gpu_count or 8))``, at least 1."""
    floor = min_gpus(recipe, key, hw_id)
    return math.ceil(floor / (gpu_count or 8)) or 1


def reachable(recipe: Recipe, key: str, hw_id: str, gpu_count: int, scales_out: bool) -> bool:
    """``isStrategyReachable`` (S4): ``(16 if scales out else 1) × gpu_count ≥ minGpus``."""
    return (MAX_NODES if scales_out else 1) * gpu_count >= min_gpus(recipe, key, hw_id)


def reference_strategy(recipe: Recipe, nodes: int) -> str:
    """``recommendStrategy`` (§2.14, docs/plan-file.md §2)."""
    offered = offered_strategies(recipe)
    default = recipe.default_strategy
    if default and default in offered:
        if nodes <= 1:
            return default
        if default.startswith("single_node_"):
            multi = "multi_node_" + default[len("single_node_"):]
            if multi in offered:
                return multi
        else:
            return default
    if nodes > 1:
        for s in ("multi_node_tp", "multi_node_dep", "multi_node_tep"):
            if s in offered:
                return s
    if "single_node_tp" in offered:
        return "single_node_tp"
    return offered[0] if offered else "single_node_tp"


def single_node_tp(recipe: Recipe, variant: Variant, strategy: str, hw_id: str,
                   profile: HardwareProfile, gpu_count: int) -> int:
    """``resolveSingleNodeTp`` (§2.2): only ``single_node_tp`` fits TP; others use ``gpu_count``.

    ``gpu_count`` is the plan's devices per node; per-device VRAM stays the profile's.
    """
    if strategy != "single_node_tp":
        return gpu_count
    so = recipe.strategy_overrides.get("single_node_tp")
    for source in (variant.tp, so.tp if so else None):
        tp = (source if isinstance(source, (int, float))
              else keyed(source, hw_id, profile) if isinstance(source, dict) else None)
        if isinstance(tp, (int, float)) and not isinstance(tp, bool) and tp > 0:
            return int(tp) if profile.gen == "cpu" else min(int(tp), gpu_count)
    per_gpu = profile.vram_per_device_gb
    need = variant.vram_minimum_gb
    if need is None or per_gpu is None:
        return gpu_count
    return 1 if need <= per_gpu else gpu_count


def pool_modes(recipe: Recipe, hw_id: str, profile: HardwareProfile, gpu_count: int) -> list[str]:
    """PD pool modes (PD1): from the offered strategies' suffixes, narrowed by
    ``so.pd_cluster.pool_modes``, filtered by reachability; ``["tp"]`` when none."""
    modes: list[str] = []
    for s in offered_strategies(recipe):
        if s.endswith("_dep"):
            m = "dep"
        elif s.endswith("_tep"):
            m = "tep"
        elif s.endswith("_tp") or s.endswith("_tp_pp") or s.endswith("_tp_dp"):
            m = "tp"
        else:
            continue
        if m not in modes:
            modes.append(m)
    if not modes:
        modes = ["tp"]
    modes = [m for m in ("tp", "tep", "dep") if m in modes]
    so = recipe.strategy_overrides.get("pd_cluster")
    if so and so.pool_modes:
        narrowed = [m for m in modes if m in so.pool_modes]
        if narrowed:
            modes = narrowed
    reach = [m for m in modes if reachable(recipe, m, hw_id, gpu_count, True)]
    return reach or modes
