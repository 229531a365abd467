"""The Features row and each feature's mode row (docs/constraints.md §3.1 F1–F4, the §3.2 feature-level
``hardware`` gate).
"""

from __future__ import annotations

from .. import gates
from .choices import DISABLED, HIDDEN, Choice, Options
from .context import _Ctx


def _feature_rows(ctx: _Ctx, opts: Options) -> None:
    """F1–F4 (§3.1) plus the feature-level ``hardware`` gate (§3.2)."""
    mooncake_on = ctx.kv in ctx.catalog.kv_stores and not (
        ctx.strategy is not None and ctx.strategy.deploy_type == "pd_cluster")
    for key, f in ctx.recipe.features.items():
        label = f.label or key
        if f.strategies is not None and ctx.strategy_id not in f.strategies:  # F1
            c = Choice(key, label, DISABLED, "Not available with this strategy", description=f.description)
        elif f.companion is not None and f.companion.command and mooncake_on:  # F2
            c = Choice(key, label, DISABLED,
                       "Needs its companion process, which isn't rendered inside a Mooncake deployment — "
                       "set KV Offload to Off to use it.", description=f.description)
        elif gates.gated_off(f.hardware, ctx.hw_id, ctx.profile):  # §3.2 feature-level hardware
            c = Choice(key, label, DISABLED, "Not supported on this hardware", description=f.description)
        else:
            c = Choice(key, label, description=f.description)
        opts.features.append(c)
        if f.modes:
            row = []
            for mk, m in f.modes.items():
                if m.variants and ctx.variant_key not in m.variants:  # F4
                    row.append(Choice(mk, m.label or mk, HIDDEN))
                elif gates.gated_off(m.hardware, ctx.hw_id, ctx.profile):  # F3
                    row.append(Choice(mk, m.label or mk, DISABLED, "Not supported on this hardware",
                                      description=m.description))
                else:
                    row.append(Choice(mk, m.label or mk, description=m.description))
            if sum(r.state != HIDDEN for r in row) < 2:  # mode row only with >= 2 modes
                row = [Choice(r.id, r.label, HIDDEN, r.reason, description=r.description) for r in row]
            opts.feature_modes[key] = row
