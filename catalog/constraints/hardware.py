"""The Hardware row (docs/constraints.md §3.1 H1–H5): :func:`hardware_listing` (how a recipe stands on one
profile, for model lists) and the row itself, the H1 restricted-profile visibility and the H5 omni
variant texts.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .. import gates
from ..ascend import UNSUPPORTED_950PR, unsupported_by_backend
from ..defaults import fits_unscalable, precision_ok_on, variant_runs_on
from ..models import HardwareProfile, Recipe, Variant
from .choices import AVAILABLE, DISABLED, HIDDEN, Choice
from .context import _Ctx

# --------------------------------------------------------------------------------------------
# lookups and defaults — the facts live in :mod:`..gates` (shared with synthesis, so the plan and the
# rows never disagree); this section adapts them to the wizard (devices per node, hardware context).


def _hw_visible(recipe: Recipe, hw_id: str, profile: HardwareProfile, detected: str | None) -> bool:
    """H1: a restricted profile is hidden unless the recipe lists it (or it is the detected one)."""
    return hw_id == detected or not gates.restricted_hidden(recipe, hw_id, profile)


def hardware_listing(catalog: Any, recipe: Recipe, hw_id: str, detected: str | None = None) -> tuple[str, str | None]:
    """How ``recipe`` stands on profile ``hw_id`` for a model list (no selection needed), as
    ``(state, reason)``:

    - ``("hidden", None)``: H1 — a restricted profile the recipe does not list (and not ``detected``);
    - ``("unlisted", text)``: the same, but offered because it is the detected profile (the plan then
      warns "restricted profile this recipe does not list (rule H1)");
    - ``("disabled", reason)``: H2 unsupported, or H3/H5 no variant runs there (verbatim §3.1 texts);
    - ``("available", None)`` otherwise.

    Raises KeyError for an unknown ``hw_id``. docs/constraints.md §3.1 H1–H3, H5.
    """
    p = catalog.taxonomy.hardware_profiles[hw_id]
    label = p.display_name or hw_id
    if gates.restricted_hidden(recipe, hw_id, p):
        if hw_id != detected:
            return HIDDEN, None
        unlisted = gates.unlisted_restricted_text(recipe, label)
    else:
        unlisted = None
    if recipe.meta.hardware.get(hw_id) == "unsupported":
        return DISABLED, _h2(p, hw_id)
    if recipe.is_omni:
        runs = any(_omni_variant_reason(catalog, v, hw_id, p) is None for v in recipe.variants.values())
    else:
        runs = any(variant_runs_on(recipe, v, hw_id, p) for v in recipe.variants.values())
    if not runs:
        return DISABLED, f"No variant of this model currently runs on {label}"
    return ("unlisted", unlisted) if unlisted else (AVAILABLE, None)


def _hardware_row(ctx: _Ctx) -> list[Choice]:
    """H1–H5 (§3.1) over every taxonomy profile, in taxonomy order."""
    recipe, out = ctx.recipe, []
    for hw_id, p in ctx.catalog.taxonomy.hardware_profiles.items():
        label = p.display_name or hw_id
        choice = _hardware_choice(ctx, hw_id, p, label)
        if not _hw_visible(recipe, hw_id, p, ctx.detected):  # H1: only a missing listing
            text = gates.unlisted_restricted_text(recipe, label)
            if ctx.allow_unverified and choice.state == AVAILABLE:
                choice = replace(choice, unverified=True, warning=text)
            else:
                choice = Choice(hw_id, label, HIDDEN, text if choice.state == AVAILABLE else choice.reason,
                                unverified=choice.state == AVAILABLE)
        if choice.state == AVAILABLE and unsupported_by_backend(p):  # docs/backends.md §3 (950PR)
            if ctx.allow_unverified:
                warning = f"{choice.warning}\n{UNSUPPORTED_950PR}" if choice.warning else UNSUPPORTED_950PR
                choice = replace(choice, unverified=True, warning=warning)
            else:
                choice = Choice(hw_id, label, DISABLED, UNSUPPORTED_950PR, unverified=True)
        out.append(choice)
    return out


def _hardware_choice(ctx: _Ctx, hw_id: str, p: HardwareProfile, label: str) -> Choice:
    """H2–H5 for one visible profile (§3.1)."""
    recipe = ctx.recipe
    if recipe.meta.hardware.get(hw_id) == "unsupported":  # H2
        return Choice(hw_id, label, DISABLED, _h2(p, hw_id))
    if recipe.is_omni:  # H5: the current variant decides
        reason = _omni_variant_reason(ctx.catalog, ctx.variant, hw_id, p)
        return Choice(hw_id, label, DISABLED, reason) if reason else Choice(hw_id, label)
    runnable = [k for k, v in recipe.variants.items() if variant_runs_on(recipe, v, hw_id, p)]
    if not runnable:  # H3
        return Choice(hw_id, label, DISABLED, f"No variant of this model currently runs on {label}")
    if ctx.variant_key not in runnable and ctx.variant_key in recipe.variants:  # H4
        best = max(runnable, key=lambda k: recipe.variants[k].vram_minimum_gb or 0)
        note = (f"{p.description}\n\nSelecting {label} also switches Variant to "
                f"{recipe.variants[best].pill_label}.")
        return Choice(hw_id, label, warning=note)
    return Choice(hw_id, label)


def _h2(p: HardwareProfile, hw_id: str) -> str:
    return (f"Not yet supported on {p.display_name or hw_id} — this model doesn't run here today, "
            "may be enabled in a future release")


def _omni_variant_reason(catalog: Any, variant: Variant, hw_id: str, p: HardwareProfile) -> str | None:
    """H5 texts for omni recipes (allowlist, precision) — None when the variant runs there."""
    profiles = catalog.taxonomy.hardware_profiles
    prec = variant.precision.upper()
    if variant.supported_hardware is not None and hw_id not in variant.supported_hardware:
        names = ", ".join(profiles[h].display_name if h in profiles else h for h in variant.supported_hardware)
        return f"{prec} is only supported on {names}"
    if not precision_ok_on(variant, p):
        return f"{prec} requires NVIDIA Blackwell"
    if not fits_unscalable(variant, p, p.vram_gb):
        return "Unavailable on the selected hardware."
    return None
