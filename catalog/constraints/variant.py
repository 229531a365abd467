"""The Variant row (docs/constraints.md §3.1 V1–V3)."""

from __future__ import annotations

from ..defaults import pick_default_hardware, precision_ok_on, variant_runs_on
from .choices import DISABLED, Choice, _num
from .context import _Ctx
from .hardware import _hw_visible


def _variant_row(ctx: _Ctx) -> list[Choice]:
    """V1–V3 (§3.1)."""
    recipe, profiles, out = ctx.recipe, ctx.catalog.taxonomy.hardware_profiles, []
    for key, v in recipe.variants.items():
        label = v.pill_label
        anywhere = any(
            _hw_visible(recipe, h, p, ctx.detected) and variant_runs_on(recipe, v, h, p)
            for h, p in profiles.items()
        )
        if not anywhere:  # V1
            out.append(Choice(key, label, DISABLED, f"No currently supported hardware can run {label}",
                              description=v.description))
            continue
        if variant_runs_on(recipe, v, ctx.hw_id, ctx.profile, ctx.node_vram):
            out.append(Choice(key, label, description=v.description))
            continue
        switch = (v.supported_hardware is not None and ctx.hw_id not in v.supported_hardware) or \
            not precision_ok_on(v, ctx.profile) or recipe.meta.hardware.get(ctx.hw_id) == "unsupported"
        if switch:  # V2
            target = pick_default_hardware(ctx.catalog, recipe, key)
            name = profiles[target].display_name if target in profiles else target
            note = (f"{v.description}\n\nSelecting this variant also switches Hardware to {name}.\n\n"
                    f"Min {_num(v.vram_minimum_gb)} GB to load — add KV cache for serving. "
                    "Scale out via multi-node if needed.")
            out.append(Choice(key, label, warning=note, description=v.description))
        else:  # V3: doesn't fit non-scalable hardware
            out.append(Choice(key, label, DISABLED, "Unavailable on the selected hardware.",
                              description=v.description))
    return out
