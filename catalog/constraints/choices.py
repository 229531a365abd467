"""The row vocabulary every axis uses: the states (:data:`AVAILABLE`, :data:`DISABLED`, :data:`HIDDEN`),
:class:`Choice` (one pill), :class:`Options` (every axis for one selection), :func:`visible`, the
``KV_OFF`` row id, and the selection reader / GB formatter the rows share (``_sel``, ``_num``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

AVAILABLE = "available"
DISABLED = "disabled"
HIDDEN = "hidden"
#: Row id of "KV offload off".
KV_OFF = "none"


@dataclass(frozen=True, slots=True)
class Choice:
    """One pill/row of an axis.

    Attributes:
        id: the value the selection uses (profile id, variant key, strategy id, node count as str, …).
        label: text to show.
        state: ``"available"`` | ``"disabled"`` | ``"hidden"``.
        reason: why it is disabled (one line, docs/constraints.md §3 text); ``None`` when available.
        warning: a caveat on an available choice (H4/V2 switches, §3.2 max_gpus, …).
        description: longer help (pool-mode tips, KV option description, preset description).
        args: vLLM args the choice adds (Advanced presets only), else ``()``.
        unverified: the choice's only gate is a missing verified run (K3 opt-in KV option, H1
            restricted profile the recipe does not list). Disabled/hidden: ``allow_unverified``
            would lift it; available: it was lifted and the plan marks it unverified.
    """

    id: str
    label: str
    state: str = AVAILABLE
    reason: str | None = None
    warning: str | None = None
    description: str | None = None
    args: tuple[str, ...] = ()
    unverified: bool = False

    @property
    def available(self) -> bool:
        """True when the choice can be picked."""
        return self.state == AVAILABLE


@dataclass
class Options:
    """Every axis for one selection (see module docstring). Lists are in display order.

    ``resolved`` holds the values the rows were computed against (after defaults):
    ``model, variant, hardware, strategy, nodes, gpus, kv_offload, router, connector, install_mode``,
    plus ``pd_modes`` — ``{"prefill": mode, "decode": mode}`` under ``pd_cluster`` (the selected or
    default pool mode snapped to the allowed ones, §2.6/§2.14; ``{}`` otherwise) — and
    ``feature_modes`` — ``{feature: mode}`` for every recipe feature with modes, the mode it runs with
    when enabled (``resolveModeKey``, §2.8). The TUI pre-marks these pills; :class:`Choice` has no
    "selected" flag of its own.
    """

    hardware: list[Choice] = field(default_factory=list)
    variant: list[Choice] = field(default_factory=list)
    strategy: list[Choice] = field(default_factory=list)
    nodes: list[Choice] = field(default_factory=list)
    pd_modes: dict[str, list[Choice]] = field(default_factory=dict)
    """``{"prefill": [...], "decode": [...]}``; empty unless the strategy is pd_cluster."""
    pd_sizes: dict[str, str] = field(default_factory=dict)
    """``{role: why}`` for each PD pool size the selection gives (``pd.<role>.nodes``) that can't run
    (§3.2 N6, :func:`~vllm_deploy_wizard.catalog.device_fit.pool_size_refusals`); strict plans refuse it."""
    pd_connector: list[Choice] = field(default_factory=list)
    pd_router: list[Choice] = field(default_factory=list)
    kv_offload: list[Choice] = field(default_factory=list)
    """Row pills: ``none``, ungrouped options, group ids (K7), ``mooncake``."""
    kv_offload_members: dict[str, list[Choice]] = field(default_factory=dict)
    """Sub-row per group id (e.g. ``offloading`` → offloading_cpu, offloading_fs)."""
    mooncake_topology: list[Choice] = field(default_factory=list)
    kv_instances_visible: bool = True
    """M5: the Mooncake instances row is hidden under PD."""
    features: list[Choice] = field(default_factory=list)
    feature_modes: dict[str, list[Choice]] = field(default_factory=dict)
    frontend: list[Choice] = field(default_factory=list)
    install_mode: list[Choice] = field(default_factory=list)
    advanced: list[Choice] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    badge: str | None = None
    """B1: "Verified on {brand} {display_name}" or None."""
    resolved: dict[str, Any] = field(default_factory=dict)

    def axis(self, name: str) -> list[Choice]:
        """The list for axis ``name`` (attribute name), e.g. ``opts.axis("strategy")``."""
        return getattr(self, name)

    def choice(self, axis: str, choice_id: str) -> Choice:
        """The choice ``choice_id`` of ``axis``; raises KeyError naming the ids present."""
        for c in self.axis(axis):
            if c.id == choice_id:
                return c
        raise KeyError(f"{axis} has no choice {choice_id!r}; ids: {[c.id for c in self.axis(axis)]}")


# --------------------------------------------------------------------------------------------
# helpers every row uses


def _sel(selection: Any, name: str, default: Any = None) -> Any:
    """Read a selection field from a pydantic model, a dataclass or a dict."""
    if isinstance(selection, dict):
        value = selection.get(name, default)
    else:
        value = getattr(selection, name, default)
    return default if value is None else value


def _num(x: float | int | None) -> str:
    """Format GB figures like the UI: whole numbers without ``.0``."""
    if x is None:
        return "?"
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def visible(choices: Iterable[Choice]) -> list[Choice]:
    """The choices that are not hidden (what a row shows)."""
    return [c for c in choices if c.state != HIDDEN]
