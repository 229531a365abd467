"""Which choices a selection allows, and why not: ``options(catalog, selection) -> Options``.

For every axis of the wizard (hardware, variant, strategy, nodes, PD pool modes per role, PD
connector, PD router, KV offload options and Mooncake topologies, features and their modes, frontend,
install mode, Advanced presets) this returns :class:`Choice` rows — ``available``, ``disabled`` with a
one-line reason, or ``hidden`` — following ``docs/synthesis.md``:

* §3.1, rules H1–H5, P1, V1–V3, S1–S6, N1–N5, PD1–PD2, K1–K7, M1–M5, F1–F4, A1, I1, B1 — reason texts
  copied verbatim where the spec gives them (each rule id is named next to its code below);
* §3.2, the wizard's decisions on what the snapshot declares but does not enforce: a strategy's
  ``hardware_match.architecture: moe`` and the ``min_gpus`` of TEP/DEP strategies *disable* it
  ("DEP needs an MoE model"); ``max_gpus`` and the PD ``min_gpus`` only *warn*; a feature-level
  ``hardware`` gate is honoured like a mode gate;
* §4, seed gates: PD connector ``brands`` and ``routers``; SMG disables DEP pools and every KV option
  incl. Mooncake; Dynamo is NVIDIA-only; IAXL's ``docker: false`` and ``hardware`` gates; a strategy
  with ``kv_offload: false`` (DPA+TP) composes with no KV option;
* §2.14, the defaults (:func:`pick_default_hardware`, :func:`recommend_strategy`,
  :func:`default_nodes`, :func:`default_pool_nodes`, :func:`default_pool_mode`) are the planner's
  (:mod:`.planner`, built on :mod:`.gates`); this module computes the rows against them.

Decisions:

* The detected profile (``detected_profile`` on the selection, or the keyword argument) is always
  offered, even when ``restricted`` and not declared by the recipe (the H1 exception).
* Devices per node = ``selection.gpus`` when given, else the profile's ``gpu_count``; VRAM per
  device stays the profile's, so node VRAM = devices × (``vram_gb / gpu_count``).
* Rules apply in the order the spec lists them; the first failing rule gives the reason.
* H4/V2 ("picking this also switches …") are *available* choices: their text goes to
  :attr:`Choice.warning`, not :attr:`Choice.reason`.
* Speed: the TUI recomputes options on every keystroke (target p95 ≤ 16 ms,
  ``bench/bench_constraints.py``), so everything here is plain dict/list work over the already
  validated models — no re-validation, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from vllm_deploy_wizard.errors import SelectionError

from . import backends, gates
from .models import HardwareProfile, KvOffloadOption, Recipe, Strategy, Variant
from .planner import (  # §2.14 defaults and the facts they rest on live with the planner
    precision_ok, fits_unscalable, variant_runs_on, pick_default_hardware, recommend_strategy, default_nodes,
    default_pool_mode, effective_feature_mode, scales_out, hidden_by_nodes, node_vram, has_multi_node,
)

AVAILABLE = "available"
DISABLED = "disabled"
HIDDEN = "hidden"

#: Most nodes a multi-node / PD deployment may span (§2.3 ``MAX_NODES``).
MAX_NODES = 16

#: Row id of the merged Mooncake pill on the KV Offload row (§2.9: one pill, topologies in a sub-row).
MOONCAKE = "mooncake"
#: Row id of "KV offload off".
KV_OFF = "none"
#: Row order of the Mooncake pill among the KV options (§2.9: Off · Simple · Offloading · Mooncake · LMCache).
MOONCAKE_ORDER = 3

#: PD pool-mode pill tips (§3.1 PD1, verbatim).
POOL_MODE_TIPS = {
    "tp": "Tensor parallel — one engine sharded across the pool's GPUs; only the head node serves HTTP.",
    "tep": "Tensor parallel plus --enable-expert-parallel (MoE models).",
    "dep": "Data + expert parallel — one vllm serve per node, DP across nodes with EP (MoE throughput).",
}
#: Pool modes in pill order.
POOL_MODES = ("tp", "tep", "dep")


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
# lookups and defaults — the facts live in :mod:`.gates` (shared with synthesis, so the plan and the
# rows never disagree); this section adapts them to the wizard (devices per node, hardware context).


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


# --------------------------------------------------------------------------------------------
# options


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
    _pd_rows(ctx, opts)
    _kv_rows(ctx, opts)
    _feature_rows(ctx, opts)
    opts.frontend = [Choice(fid, f.label or fid) for fid, f in catalog.taxonomy.frontends.items()]
    opts.install_mode = _install_row(ctx)
    opts.advanced = _advanced_row(ctx)
    _banners(ctx, opts)
    opts.warnings += advanced_overlaps(list(_sel(selection, "advanced_args") or []), opts.advanced)
    return opts


def _context(catalog: Any, selection: Any, detected_profile: str | None) -> _Ctx:
    model = _sel(selection, "model")
    if not model:
        raise SelectionError("selection: `model` is required (a recipe hf id or a local model directory)")
    from .custom import resolve_model

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
        from vllm_deploy_wizard.suggest import did_you_mean

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
    )


def _feature_list(value: Any) -> list[str]:
    """The explicitly selected features (``"default"``/``"none"``/None → ``[]``: nothing to check)."""
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []


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
    if not precision_ok(variant, p):
        return f"{prec} requires NVIDIA Blackwell"
    if not fits_unscalable(variant, p, p.vram_gb):
        return "Unavailable on the selected hardware."
    return None


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
            not precision_ok(v, ctx.profile) or recipe.meta.hardware.get(ctx.hw_id) == "unsupported"
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


def _short(s: Strategy | None, sid: str) -> str:
    if s is None:
        return sid
    return s.short_label or s.display_name or sid


def _strategy_row(ctx: _Ctx, warnings: list[str]) -> list[Choice]:
    """S1–S6 (§3.1) and the §3.2 ``hardware_match`` decisions, compatible strategies first."""
    recipe, hw, p = ctx.recipe, ctx.hw_id, ctx.profile
    effective = gates.offered_strategies(recipe)
    order = list(dict.fromkeys([*effective, *recipe.strategy_hardware, *ctx.catalog.strategies]))
    is_moe = (recipe.model.architecture or "").lower() == "moe"
    hw_name = p.display_name or hw
    out = []
    for sid in order:
        s = ctx.catalog.strategies.get(sid)
        if s is None or s.deploy_type == "kv_store_lb":  # S1 (and ids the catalog lacks)
            continue
        label = s.display_name or sid
        hm = s.hardware_match
        short = _short(s, sid)
        if hidden_by_nodes(s, ctx.nodes):  # S2
            why = "a single node" if s.deploy_type != "single_node" else f"{ctx.nodes} nodes"
            out.append(Choice(sid, label, HIDDEN, f"{label} is not offered for {why} — change the node count."))
            continue
        moe_only = hm is not None and (hm.architecture or "").lower() == "moe"
        if moe_only and not is_moe:  # §3.2, shown (not hidden) so a dense model says why there is no EP
            out.append(Choice(sid, label, DISABLED, f"{short} needs an MoE model"))
            continue
        listed = sid in effective or sid in recipe.strategy_hardware  # S3 (S5 below disables)
        if not listed:  # S3
            out.append(Choice(sid, label, HIDDEN, f"{recipe.hf_id} does not list {label} under "
                              "compatible_strategies."))
            continue
        if not gates.reachable(recipe, sid, hw, ctx.gpus, scales_out(s)):  # S4
            out.append(Choice(sid, label, HIDDEN, f"{label} can't reach this recipe's GPU floor on {hw_name}."))
            continue
        if not gates.strategy_supported_on_hw(recipe, sid, hw, p):  # S5
            out.append(Choice(sid, label, DISABLED, f"{label} isn't supported on {hw_name} for this model."))
            continue
        total = ctx.gpus * (max(ctx.nodes, 1) if s.deploy_type != "single_node" else 1)
        expert = sid.endswith(("tep", "dep")) or s.parallelism == "dpa_tp"
        if hm is not None and hm.min_gpus and expert and total < hm.min_gpus:  # §3.2
            out.append(Choice(sid, label, DISABLED,
                              f"{short} needs at least {hm.min_gpus} GPUs; {hw_name} has {total}"))
            continue
        warning = None
        if hm is not None and hm.max_gpus and s.deploy_type == "single_node" and ctx.gpus > hm.max_gpus:
            warning = f"{short} is declared for at most {hm.max_gpus} GPUs per node; {hw_name} has {ctx.gpus}."
        elif hm is not None and hm.min_gpus and s.deploy_type == "pd_cluster" and \
                ctx.gpus * MAX_NODES >= hm.min_gpus > ctx.gpus * max(ctx.nodes, 2):
            warning = (f"{short} is declared for at least {hm.min_gpus} GPUs; {hw_name} nodes have "
                       f"{ctx.gpus} each — size the pools accordingly.")
        out.append(Choice(sid, label, warning=warning))
        if warning and sid == ctx.strategy_id:
            warnings.append(warning)
    return out


def _nodes_row(ctx: _Ctx) -> list[Choice]:
    """N1–N4 (§3.1); pills 1, 2 and the strategy floor when 2 < floor ≤ 16 (§2.14)."""
    recipe, p, hw = ctx.recipe, ctx.profile, ctx.hw_id
    floor = gates.nodes_for(recipe, ctx.strategy_id, hw, ctx.gpus) if scales_out(ctx.strategy) else 1
    counts = [1, 2]
    if 2 < floor <= MAX_NODES:
        counts.append(floor)
    if ctx.nodes not in counts and 1 <= ctx.nodes <= MAX_NODES:
        counts.append(ctx.nodes)
    counts.sort()
    name = p.display_name or hw
    has_multi = has_multi_node(ctx.catalog, recipe)
    need = ctx.variant.vram_minimum_gb
    out = []
    for n in counts:
        if n > 1:
            if not has_multi:  # N1
                out.append(Choice(str(n), str(n), DISABLED,
                                  "This recipe does not declare a multi-node strategy. Fits in a single node."))
            elif not p.scalable:  # N2
                out.append(Choice(str(n), str(n), DISABLED,
                                  f"{name} is a single-GPU workstation and can't be clustered into multiple nodes."))
            elif p.gen == "xpu":  # N3
                out.append(Choice(str(n), str(n), DISABLED, backends.XPU_MULTI_NODE))
            else:
                out.append(Choice(str(n), str(n)))
        elif need is not None and ctx.node_vram is not None and need > ctx.node_vram:  # N4
            out.append(Choice("1", "1", DISABLED,
                              f"Single-node can't fit this variant on {name} ({_num(need)}GB > "
                              f"{_num(ctx.node_vram)}GB) — use multi-node"))
        else:
            out.append(Choice("1", "1"))
    return out


def _pd_rows(ctx: _Ctx, opts: Options) -> None:
    """PD1 pool modes per role, seed connectors/routers (§3.1 PD1, §4.7–4.8)."""
    s = ctx.strategy
    if s is None or s.deploy_type != "pd_cluster":
        return
    opts.kv_instances_visible = False  # M5
    allowed = gates.pool_modes(ctx.recipe, ctx.hw_id, ctx.profile, ctx.gpus)
    smg = ctx.router == "smg"
    for role in ("prefill", "decode"):
        row = []
        for m in POOL_MODES:
            if m not in allowed:
                row.append(Choice(m, m.upper(), HIDDEN, description=POOL_MODE_TIPS[m]))
            elif smg and m == "dep":
                row.append(Choice(m, m.upper(), DISABLED, "SMG serves TP/TEP pools only — pick the vLLM "
                                  "or Dynamo router for DEP pools.", description=POOL_MODE_TIPS[m]))
            else:
                row.append(Choice(m, m.upper(), description=POOL_MODE_TIPS[m]))
        if sum(c.state != HIDDEN for c in row) < 2:  # PD1: a single mode hides the pills
            row = [Choice(c.id, c.label, HIDDEN, c.reason, description=c.description) for c in row]
        opts.pd_modes[role] = row
    brand, name = ctx.profile.brand, ctx.profile.display_name or ctx.hw_id
    routers = {"vllm": "vLLM Router"}
    if s.dynamo is not None:
        routers["dynamo"] = s.dynamo.display_name or "Dynamo"
    if s.smg is not None:
        routers["smg"] = s.smg.display_name or "SMG"
    conn = s.connectors.get(ctx.connector) if ctx.connector else None
    for cid, c in s.connectors.items():
        cname = c.display_name or cid
        allowed_routers = c.routers or ["vllm"]
        if c.brands and brand not in c.brands:
            opts.pd_connector.append(Choice(cid, cname, DISABLED,
                                            f"{cname} needs {' or '.join(c.brands)} hardware — not available on "
                                            f"{brand} {name}.", description=c.description))
        elif ctx.router not in allowed_routers:
            names = ", ".join(routers.get(r, r) for r in allowed_routers)
            opts.pd_connector.append(Choice(cid, cname, DISABLED, f"{cname} works with: {names}.",
                                            description=c.description))
        else:
            opts.pd_connector.append(Choice(cid, cname, description=c.description))
    for rid, rname in routers.items():
        reason = None
        if rid == "dynamo" and s.dynamo is not None and s.dynamo.brands and brand not in s.dynamo.brands:
            reason = f"{rname} needs {' or '.join(s.dynamo.brands)} hardware — not available on {brand} {name}."
        elif conn is not None and rid not in (conn.routers or ["vllm"]):
            reason = f"{conn.display_name or ctx.connector} works with: " + \
                ", ".join(routers.get(r, r) for r in (conn.routers or ["vllm"])) + "."
        warning = None
        if rid == "smg" and reason is None:
            modes = [(_pd_mode(ctx, r)) for r in ("prefill", "decode")]
            if "dep" in modes or ctx.kv != KV_OFF:
                warning = f"{rname} serves TP/TEP pools without KV offload — DEP pools and KV options are turned off."
        desc = s.dynamo.description if rid == "dynamo" and s.dynamo else s.smg.description if rid == "smg" and s.smg else None
        opts.pd_router.append(Choice(rid, rname, DISABLED if reason else AVAILABLE, reason, warning,
                                     description=desc))


def _pd_mode(ctx: _Ctx, role: str) -> str:
    """Effective pool mode of ``role``: the selected ``pd.<role>.mode`` or the default, snapped (§2.6)."""
    block = ctx.pd.get(role) if isinstance(ctx.pd, dict) else None
    requested = str(block["mode"]) if isinstance(block, dict) and block.get("mode") else None
    mode = default_pool_mode(ctx.recipe, role, ctx.strategy, ctx.hw_id, ctx.profile, ctx.gpus, requested)
    if mode == "dep" and requested is None and ctx.router == "smg":  # docs/synthesis.md §4.8: SMG turns DEP pools off
        allowed = gates.pool_modes(ctx.recipe, ctx.hw_id, ctx.profile, ctx.gpus)
        mode = next((m for m in ("tep", "tp") if m in allowed), mode)
    return mode


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
            if topo_reason is None and ctx.recipe.kv_cache_strategy_hardware.get(sid, {}).get(ctx.hw_id) == "unsupported":
                topo_reason = f"{st.display_name or sid} is not supported on {name}."  # M4 topology pill
            opts.mooncake_topology.append(Choice(sid, st.label or st.display_name or sid,
                                                 DISABLED if topo_reason else AVAILABLE, topo_reason,
                                                 description=st.description))
            if sid == ctx.kv and topo_reason:
                opts.warnings.append(f"KV offload {st.display_name or sid} is off: {topo_reason}")
    pills.sort(key=lambda t: t[0])
    opts.kv_offload = [Choice(KV_OFF, "Off"), *(c for _, c in pills)]


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


def _effective_install(recipe: Recipe, profile: HardwareProfile, requested: str | None) -> str:
    """Effective install mode (docs/plan-file.md §2 ``install_mode``; docs/synthesis.md §2.10; docs/constraints.md §3.1 I1): the one rule synthesis uses."""
    return backends.resolve_install_mode(recipe, profile, requested)


def _pip_allowed(recipe: Recipe, profile: HardwareProfile) -> bool:
    inst = recipe.model.install or {}
    hw_inst = profile.install or {}
    return profile.gen not in ("tpu", "xpu") and inst.get("pip") is not False and hw_inst.get("pip") is not False


def _install_row(ctx: _Ctx) -> list[Choice]:
    """I1 (§3.1, §2.10): pip hidden on TPU/XPU, ``install.pip: false`` (recipe or seed hardware);
    docker hidden on ``install.docker: false``."""
    inst = ctx.recipe.model.install or {}
    pip = Choice("pip", "pip") if _pip_allowed(ctx.recipe, ctx.profile) else Choice("pip", "pip", HIDDEN)
    docker = Choice("docker", "Docker", HIDDEN) if inst.get("docker") is False else Choice("docker", "Docker")
    return [pip, docker]


#: Advanced presets always shown (§3.1, after A1): (id, label, args).
ADVANCED_PRESETS = (
    ("max-num-batched-tokens", "max-num-batched-tokens 8192", ("--max-num-batched-tokens", "8192")),
    ("max-num-seqs", "max-num-seqs 256", ("--max-num-seqs", "256")),
    ("gpu-memory-utilization", "gpu-memory-utilization 0.95", ("--gpu-memory-utilization", "0.95")),
    ("max-model-len", "max-model-len auto", ("--max-model-len", "auto")),
)


def _advanced_row(ctx: _Ctx) -> list[Choice]:
    """A1 (§3.1): gated presets hidden unless the recipe/strategy allows them; recipe
    ``advanced_options`` appended."""
    m = ctx.recipe.model
    gated = [
        ("decode-context-parallel-size", "decode-context-parallel-size = 8",
         ("--decode-context-parallel-size", "8"), m.supports_dcp),
        ("no-enable-flashinfer-autotune", "no-enable-flashinfer-autotune",
         ("--no-enable-flashinfer-autotune",), m.flashinfer_autotune),
        ("enable-ep-weight-filter", "enable-ep-weight-filter", ("--enable-ep-weight-filter",),
         ctx.strategy_id.endswith(("tep", "dep"))),
    ]
    out = [Choice(i, label, AVAILABLE if ok else HIDDEN, args=args) for i, label, args, ok in gated]
    out += [Choice(i, label, args=args) for i, label, args in ADVANCED_PRESETS]
    for extra in ctx.recipe.advanced_options:
        if isinstance(extra, dict) and extra.get("id"):
            out.append(Choice(str(extra["id"]), str(extra.get("label") or extra["id"]),
                              description=extra.get("description"),
                              args=tuple(str(a) for a in extra.get("args") or ())))
    return out


def advanced_overlaps(args: list[str], presets: Iterable[Choice]) -> list[str]:
    """Warnings for a flag set both by an Advanced preset and by a typed advanced arg.

    ``args`` is ``selection.advanced_args`` (presets are contiguous runs of their ``args`` inside it,
    typed args are the rest); ``--flag value`` and ``--flag=value`` spellings are the same flag.
    vLLM's argument parser keeps the *last* value, so the message names the one that wins, e.g.
    "--max-model-len is set by the preset max-model-len auto and typed in Advanced args
    (--max-model-len 256) — the last one wins: --max-model-len 256". Empty list when nothing overlaps.
    """
    owner: list[str | None] = [None] * len(args)
    for choice in presets:
        run = list(choice.args or ())
        n = len(run)
        if not n:
            continue
        for i in range(len(args) - n + 1):
            if args[i:i + n] == run and all(o is None for o in owner[i:i + n]):
                owner[i:i + n] = [choice.label or choice.id] * n
                break
    seen: dict[str, list[tuple[str | None, str]]] = {}
    for i, arg in enumerate(args):
        if not arg.startswith("--"):
            continue
        flag, eq, value = arg.partition("=")
        if not eq:
            value = args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("--") else ""
        seen.setdefault(flag, []).append((owner[i], f"{flag} {value}".strip()))
    out = []
    for flag, uses in seen.items():
        presets_here = [who for who, _ in uses if who is not None]
        typed = [text for who, text in uses if who is None]
        if presets_here and typed:
            out.append(f"{flag} is set by the preset {presets_here[0]} and typed in Advanced args "
                       f"({typed[0]}) — the last one wins: {uses[-1][1]}")
    return out


def _banners(ctx: _Ctx, opts: Options) -> None:
    """N5 VRAM banner, §2.2 TP hint (TP < devices) and TP-exceeds-devices warning, LMCache strategy hint,
    B1 badge."""
    p, s = ctx.profile, ctx.strategy
    name = p.display_name or ctx.hw_id
    need = ctx.variant.vram_minimum_gb
    single = s is None or s.deploy_type == "single_node" or (s.deploy_type == "multi_node" and ctx.nodes == 1)
    if single and need is not None and ctx.node_vram is not None and need > ctx.node_vram:  # N5
        per = p.vram_per_device_gb
        opts.warnings.append(
            f"Insufficient VRAM for single-node: {name} provides {ctx.gpus}×{_num(per)}G = "
            f"{_num(ctx.node_vram)}GB, but this variant needs at least {_num(need)}GB for weights alone "
            "(KV cache requires more). Switch to a higher-memory GPU, use multi-node TP, or lower "
            "--max-model-len to shrink the KV cache footprint.")
    if ctx.strategy_id == "single_node_tp" and ctx.nodes == 1:  # §2.2 [UI] hint
        # Decision: the hint only when TP < devices, also on CPU (the
        # spec's "(or CPU)" printed "runs on 4 of 4 … to scale up"); CPU TP is not clamped (§2.2
        # step 1), so TP > devices is a warning naming both numbers.
        tp = gates.single_node_tp(ctx.recipe, ctx.variant, "single_node_tp", ctx.hw_id, p, ctx.gpus)
        unit = "CPU NUMA node(s)" if p.gen == "cpu" else "GPUs"
        if tp < ctx.gpus:
            opts.warnings.append(f"This recipe runs on {tp} of {ctx.gpus} {unit} on the selected node — "
                                 "add --tensor-parallel-size N via Advanced to scale up.")
        elif tp > ctx.gpus:
            opts.warnings.append(f"TP {tp} exceeds the {ctx.gpus} device(s) per node of {name} — the recipe's "
                                 f"--tensor-parallel-size {tp} needs {tp} {unit}; set Devices per node or "
                                 "override --tensor-parallel-size via Advanced.")
    if {"text_only", "encoder_parallel"} <= set(ctx.features):  # §2.8 [UI] mutual exclusion
        opts.warnings.append("text_only and encoder_parallel are mutually exclusive — enabling one clears "
                             "the other.")
    if ctx.recipe.meta.hardware.get(ctx.hw_id) == "verified" and ctx.kv == KV_OFF:  # B1
        opts.badge = f"Verified on {p.brand} {name}"


def visible(choices: Iterable[Choice]) -> list[Choice]:
    """The choices that are not hidden (what a row shows)."""
    return [c for c in choices if c.state != HIDDEN]
