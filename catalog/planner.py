"""The planner: one entry point from (catalog, selection, node facts) to everything a selection
implies — resolved defaults, every option with its state and reason, the plan, and its warnings.

``vllm-wizard plan`` and the wizard call only :func:`plan_selection`; ``options()``
(:mod:`.constraints`, the option rows) and ``synthesize()`` (:mod:`.synthesis`, the processes) are
its two halves. The §2.14 defaults both are computed against live below them in :mod:`.defaults`;
the wizard's landing selection (:func:`landing_selection`) lives here. Rules (docs/catalog.md §3–§5,
docs/constraints.md §3):

* **Corrections** (docs/synthesis.md §7): right after synthesis, the builder's commands that
  cannot run are corrected (:func:`.corrections.correct_plan`), each with a ``corrected:`` note.
* **Custom models**: a model id that is no recipe is resolved as a custom model
  (:func:`.custom.resolve_model`) and added to the catalog for this plan.
* **Node facts** (:class:`.hostfit.HostCapacity`, only when the plan is for the node they were read
  on): on a CPU backend (``generation: cpu``) the device count is the detected NUMA node count
  (vLLM CPU runs one rank per NUMA node; a 1-NUMA box never gets the profile's 4), and the memory a
  device offers is one NUMA node's — the profile is adjusted for this plan only. The builder's
  offload sizes above what the node can pin are lowered to it (:func:`.host_sizing.size_to_host`,
  docs/fit.md §9); host-fit warnings (LMCache L1 size, CPU workers, CPU KV tier) are added for
  what is still beyond it (the person's own values).
* **Node count** (``strict``): a selection without ``nodes`` is planned with the count the option
  rows resolve (docs/synthesis.md §2.14: 2 when the variant does not fit one node or a multi-node
  strategy is picked), or the first count they offer when that one is disabled (N6: co-located PD
  pools that do not fit one node) — the count the wizard shows; ``strict=False`` keeps the
  reference builder's 1.
* **Ids**: an unknown ``kv_offload`` or feature is an error with did-you-mean (like every other id).
* **Gates** (``strict``): a value the person gave that the wizard disables or hides — a dense model
  with DEP, a strategy the hardware can't run, a connector of another brand — is refused with the
  reason (:class:`PlanRefused`). A gate that is only a missing verified run (K3 opt-in KV option,
  H1 restricted profile the recipe does not list) is lifted by ``allow_unverified`` and the plan
  lists it under ``unverified``; hard incompatibilities can't be lifted. ``strict=False`` (an exact
  ``--recipes`` checkout, the reference builder's view) plans such selections with warnings, as the
  reference does.
* **Warnings**: synthesis's gate warnings, TP that does not divide the attention heads (custom
  models, from their ``config.json``), host-fit warnings.
* **Ranks per node** (:func:`rank_overflow`): a serve process whose TP × PP × DP on its node is above
  the devices per node (``--gpus`` or the profile's count) is refused (``strict``), a warning otherwise
  (the wizard's review). The engines placed on one machine (co-located PD pools) are added together
  (:func:`node_overflow`, their pins or ranks): above the node's devices is refused/warned the same way.
* **Devices per node** (``strict``): ``gpus`` above the profile's ``gpu_count`` is refused off the
  detected node for profiles whose device count is fixed (NVIDIA; :func:`.device_fit.gpus_shortfall`)
  and a warning elsewhere (partitions, NUMA nodes).
* **Devices** (docs/fit.md §10): ``selection.devices`` (``plan --devices``) is checked against the
  node's devices, sets ``gpus`` to its count and pins the serve processes
  (:func:`.device_pick.pin_devices`); on Ascend docker processes pass the device files the node has;
  a node whose devices differ gets a warning naming each when none are picked.
* **Open listeners** (:mod:`.listeners`): an engine serving its API on every interface without an
  API key (vLLM's default without ``--host``), or a router bound to every interface, is a warning
  naming the fix for the plan's shape.
* **Fit** (docs/fit.md §6): the serve process's KV capacity from the model's own config, as
  ``plan.fit`` and notes (:func:`.plan_fit.plan_fit`); on the detected node the device memory is
  the smallest detected device the plan uses (:func:`.device_pick.device_bytes`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vllm_deploy_wizard.common.errors import SelectionError
from vllm_deploy_wizard.common.flags import last_flag_value
from vllm_deploy_wizard.common.suggest import did_you_mean

from .hostfit import HostCapacity
from .selection import Selection

#: What a refusal tells the person to do when allow_unverified would lift every gate.
FORCE_HINT = "pass --allow-unverified to plan it anyway (the plan marks it unverified)"

#: Selection key → (options axis, flag) checked for refusals, in the order they are reported.
_AXES = (
    ("hardware", "hardware", "--hardware"),
    ("variant", "variant", "--variant"),
    ("strategy", "strategy", "--strategy"),
    ("connector", "pd_connector", "--connector"),
    ("router", "pd_router", "--router"),
    ("frontend", "frontend", "--frontend"),
    ("install_mode", "install_mode", "--install-mode"),
)


@dataclass(frozen=True)
class Refusal:
    """A value the person gave that the wizard would not offer.

    ``key``: selection key (``strategy``, ``kv_offload``, ``features``, …); ``flag``: the CLI flag;
    ``value``: the id given; ``reason``: the one-line reason of docs/constraints.md §3;
    ``unverified``: True when the only gate is a missing verified run (lifted by allow_unverified).
    """

    key: str
    flag: str
    value: str
    reason: str
    unverified: bool = False

    def line(self) -> str:
        """``--strategy single_node_dep: <reason>``."""
        return f"{self.flag} {self.value}: {self.reason}"


class PlanRefused(SelectionError):
    """The selection asks for what the wizard disables; ``refusals`` lists each value and why.

    ``ways``: other ways out that need no override, one line each, printed before the override hint
    (``plan`` adds the detected profile H1 allows, checked by planning it); the override hint then
    starts with "or"."""

    def __init__(self, refusals: list[Refusal], ways: list[str] | None = None):
        self.refusals = refusals
        self.ways = list(ways or [])
        lines = [r.line() for r in refusals]
        if all(r.unverified for r in refusals):
            tail = f"or {FORCE_HINT}" if self.ways else FORCE_HINT
        elif any(r.unverified for r in refusals):
            tail = ("pick another value for the others (see `vllm-wizard plan --help`); --allow-unverified "
                    "lifts only the ones without a verified run")
        else:
            tail = "pick a value the recipe offers on this hardware; these gates can't be forced"
        super().__init__("refused: the wizard does not offer this selection:\n  " + "\n  ".join(lines)
                         + "".join(f"\n{way}" for way in self.ways) + f"\n{tail}")


@dataclass
class Planned:
    """Everything :func:`plan_selection` built.

    ``catalog``: the catalog planned against (with a custom model or node-adjusted profile added);
    ``selection``: the selection planned (model id normalised, node facts applied);
    ``options``: :class:`.constraints.Options` of that selection (rows, states, reasons, resolved);
    ``plan``: the :class:`.plan.LaunchPlan` (``plan.notes`` holds every ``warning:`` line);
    ``refusals``: values the wizard would not offer (empty when planned strictly);
    ``warnings``: the ``warning:`` notes added here (heads, host fit), also in ``plan.notes``.
    """

    catalog: Any
    selection: Selection
    _options: Any
    plan: Any
    _refusals: list[Refusal] | None = None
    warnings: list[str] = field(default_factory=list)
    detected_profile: str | None = None
    fixes: dict[str, int] = field(default_factory=dict)
    """``companion_args`` values that make the plan fit the node (host-fit warnings' suggestions)."""

    @property
    def options(self) -> Any:
        """The option rows of :attr:`selection` (computed on first use when not planned strictly:
        the wizard already has its rows, so a keystroke does not pay for them twice)."""
        if self._options is None:
            from .constraints import options

            self._options = options(self.catalog, self.selection, detected_profile=self.detected_profile)
        return self._options

    @property
    def refusals(self) -> list[Refusal]:
        """Values of :attr:`selection` the wizard would not offer (see :func:`refusals_for`)."""
        if self._refusals is None:
            self._refusals = refusals_for(self.options, self.selection)
        return self._refusals


def plan_selection(catalog: Any, selection: Selection, host: HostCapacity | None = None, *,
                   detected_profile: str | None = None, strict: bool = True) -> Planned:
    """Plan ``selection`` on ``catalog`` (see the module docstring for every rule).

    Args:
        catalog: a loaded catalog.
        selection: the :class:`Selection` (values not given take the §2.14 defaults).
        host: the node's facts, when the plan is for the node they were read on; None = off-node.
        detected_profile: the detected profile id (H1 exception of the hardware row).
        strict: refuse values the wizard disables (True), or plan them with warnings (False).

    Raises:
        SelectionError: unknown model/variant/hardware/strategy/KV offload/feature id (with
            did-you-mean) or a malformed selection.
        PlanRefused: ``strict`` and a given value is disabled or hidden (lists each with its reason).
    """
    from .constraints import options
    from .device_fit import gpus_shortfall
    from .synthesis import synthesize

    catalog, selection = _resolve_model(catalog, selection)
    selection = _canonical_ids(catalog, selection)
    check_ids(catalog, selection)
    catalog, selection = apply_node_facts(catalog, selection, host)
    devices = _picked_devices(selection, host)
    device_notes = []
    if devices and selection.gpus != len(devices):  # the picked devices are the devices per node
        if selection.gpus is not None:
            device_notes.append(f"warning: {selection.gpus} devices per node asked, {len(devices)} picked with "
                                f"--devices: planning for the {len(devices)} picked")
        selection = selection.model_copy(update={"gpus": len(devices)})
    plan = synthesize(catalog, selection)  # first: it names unknown ids with did-you-mean
    if devices:  # an index the profile's nodes do not have (the node's own devices unknown)
        from .device_pick import check_profile_devices

        picked_on = catalog.taxonomy.hardware_profiles.get(str(plan.resolved.get("hardware")))
        if picked_on is not None:
            check_profile_devices(devices, picked_on, host)
    opts = refusals = None
    if strict:
        opts = options(catalog, selection, detected_profile=detected_profile)
        if selection.nodes is None and opts.strategy and opts.resolved.get("nodes"):
            # plan (and check) the node count the rows resolve and show (docs/synthesis.md §2.14;
            # the first one the nodes row offers when the landing count is disabled, constraints
            # §3.2 N6): synthesis alone takes 1. The rows are redone at that count.
            nodes = int(opts.resolved["nodes"])
            selection = selection.model_copy(update={"nodes": nodes})
            if nodes != 1:
                opts = options(catalog, selection, detected_profile=detected_profile)
                plan = synthesize(catalog, selection)
        refusals = refusals_for(opts, selection)
        profile = catalog.taxonomy.hardware_profiles.get(str(plan.resolved.get("hardware")))
        too_many = gpus_shortfall(profile, selection.gpus, host is not None) if profile is not None else None
        if too_many is not None:  # devices per node above what a node of the profile has
            refusals.append(Refusal("gpus", "--gpus", str(selection.gpus), too_many))
        refusals += [Refusal("advanced_args", flag, value, why)  # ranks per node above its devices
                     for flag, value, why in rank_overflow(profile, plan, selection.gpus)]
        if not any(r.key == "nodes" or r.key.startswith("pd.") for r in refusals):  # N6 already says it
            refusals += [Refusal("processes", node, f"({names})", why)  # engines of one machine, together
                         for node, names, why in node_overflow(profile, plan, selection.gpus)]
        blocking = [r for r in refusals if not (r.unverified and selection.allow_unverified)]
        if blocking:
            raise PlanRefused(blocking)
    from .corrections import correct_plan

    correct_plan(catalog, selection, plan)  # docs/synthesis.md §7: builder commands that cannot run
    from .plan_notes import mixed_pools_note, single_node_tp_hint

    plan.notes += mixed_pools_note(plan)  # one PD pool co-located, the other on nodes of its own
    recipe = catalog.recipe(selection.model)
    hw_profile = catalog.taxonomy.hardware_profiles.get(str(plan.resolved.get("hardware")))
    variant = recipe.variants.get(str(plan.resolved.get("variant"))) if not recipe.is_omni else None
    if hw_profile is not None and variant is not None:  # the constraints panel's TP hint (§2.2)
        hint = single_node_tp_hint(recipe, variant, plan.resolved.get("strategy"), int(plan.resolved.get("nodes") or 1),
                                   str(plan.resolved["hardware"]), hw_profile, selection.gpus or hw_profile.gpu_count,
                                   selection.advanced_args)
        plan.notes += [hint] if hint else []
    warnings = head_warnings(catalog.recipe(selection.model), plan)
    warnings += [f"warning: {flag} {value}: {why}"  # ranks per node above its devices (refused when strict)
                 for flag, value, why in rank_overflow(hw_profile, plan, selection.gpus)]
    warnings += [f"warning: {node} ({names}): {why}"  # engines of one machine above its devices together
                 for node, names, why in node_overflow(hw_profile, plan, selection.gpus)]
    fixes: dict[str, int] = {}
    if host is not None:
        from .backends import apply_host_settings
        from .host_sizing import size_to_host
        from .hostfit import companion_fixes, host_fit_warnings

        warnings += apply_host_settings(catalog.taxonomy.hardware_profiles, plan, host)
        plan.notes += size_to_host(catalog, plan, host, selection.companion_args)  # docs/fit.md §9
        warnings += host_fit_warnings(catalog, plan, host)
        fixes = companion_fixes(catalog, plan, host)
    profile = catalog.taxonomy.hardware_profiles.get(str(plan.resolved.get("hardware")))
    if profile is not None:  # docs/fit.md §10: the devices of this node the plan runs on
        from .device_pick import ascend_device_nodes, mixed_devices_note, pin_devices

        used = selection.gpus or profile.gpu_count
        warnings += device_notes + (mixed_devices_note(host, devices, used) if host is not None else [])
        plan.notes += pin_devices(profile, plan, devices, host) if devices else []
        plan.notes += ascend_device_nodes(plan, host) if host is not None or devices else []
    plan.notes += [w for w in warnings if w not in plan.notes]
    plan.notes += [f"warning: unverified: {line}" for line in plan.unverified]
    from .device_pick import device_bytes
    from .plan_fit import plan_fit  # docs/fit.md §6

    count = selection.gpus or (profile.gpu_count if profile is not None else None)
    plan.fit, fit_notes = plan_fit(plan, profile, host,
                                   device_bytes=device_bytes(host, devices, count) if host is not None else None)
    plan.notes += fit_notes
    from .listeners import listener_notes  # engines on every interface without an API key (issue #21)

    plan.notes += [n for n in listener_notes(plan) if n not in plan.notes]
    return Planned(catalog, selection, opts, plan, refusals, warnings, detected_profile, fixes)


def _picked_devices(selection: Selection, host: HostCapacity | None) -> list[int] | None:
    """``selection.devices`` checked (docs/fit.md §10): no index twice, each one this node has.

    Raises:
        SelectionError: names ``--devices`` and the node's devices."""
    from .device_pick import check_devices, parse_devices

    devices = parse_devices(selection.devices)
    if devices and host is not None:
        check_devices(devices, host)
    return devices


def options_for(catalog: Any, selection: Any, *, detected_profile: str | None = None,
                host: HostCapacity | None = None) -> Any:
    """The option rows (:func:`.constraints.options`) of ``selection`` with node facts applied the
    way :func:`plan_selection` applies them (so the rows and the plan see the same devices).

    ``selection``: a :class:`Selection` or a mapping of its keys. Raises what ``options()`` raises.
    """
    from .constraints import options

    if host is not None and host.numa_nodes:
        sel = selection if isinstance(selection, Selection) else Selection(**{
            k: v for k, v in dict(selection).items() if v is not None})
        catalog, selection = apply_node_facts(catalog, sel, host)
    return options(catalog, selection, detected_profile=detected_profile)


# ---------------------------------------------------------------------------------------------
# the wizard's landing values


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


#: Selection keys filled from ``Options.resolved`` when the person has not picked them (see
#: :func:`planned_selection`). ``gpus`` is left out: unset means the profile's count in both cores.
RESOLVED_KEYS = ("hardware", "variant", "strategy", "nodes", "install_mode")


def landing_selection(selection: Mapping[str, Any], opts: Any) -> dict[str, Any]:
    """The selection the wizard plans: ``selection`` with every value the configure screen *shows*
    but the person did not pick filled from ``opts.resolved`` (docs/synthesis.md §2.14 UI rule).

    Why: with no strategy picked, ``options()`` resolves a *usable* strategy (the one the rows are
    computed against and the screen marks) while ``synthesize`` alone would take the reference pick
    (e.g. Kimi-K3 on Xeon 6: PD vs single_node_tp). Sending the displayed values makes the two
    screens agree. Filled: hardware, variant, strategy (not for omni recipes, which have no strategy
    row, §2.12), nodes (not for omni either), install_mode; under ``pd_cluster`` the pool modes
    (``pd.{prefill,decode}.mode`` from ``resolved["pd_modes"]``), router and connector; a KV offload
    other than ``none``. ``opts`` None (no model yet) returns a copy of ``selection``. Never raises.
    """
    new = dict(selection)
    resolved = _get(opts, "resolved") or {} if opts is not None else {}
    if not resolved:
        return new
    omni = not (_get(opts, "strategy") or [])
    for key in RESOLVED_KEYS:
        if key in ("strategy", "nodes") and omni:
            continue
        if new.get(key) is None and resolved.get(key) is not None:
            new[key] = resolved[key]
    if resolved.get("strategy") == "pd_cluster" and new.get("strategy") == "pd_cluster":
        pd = {role: dict(pool or {}) for role, pool in (new.get("pd") or {}).items()}
        for role, mode in (resolved.get("pd_modes") or {}).items():
            if mode and not pd.get(role, {}).get("mode"):
                pd.setdefault(role, {})["mode"] = mode
        if pd:
            new["pd"] = pd
        for key in ("router", "connector"):
            if new.get(key) is None and resolved.get(key) is not None:
                new[key] = resolved[key]
    kv = resolved.get("kv_offload")
    if new.get("kv_offload") is None and kv and kv != "none":
        new["kv_offload"] = kv
    return new


# ---------------------------------------------------------------------------------------------
# the steps


def _resolve_model(catalog: Any, selection: Selection) -> tuple[Any, Selection]:
    """A recipe id stays as given; anything else is a custom model added to the catalog (one id
    from here on: a local folder given as ./m1, m1 or m1/ is its absolute path)."""
    from pathlib import Path

    try:
        catalog.recipe(selection.model)
        return catalog, selection
    except SelectionError:
        from .custom import resolve_model

        local = Path(selection.model).expanduser()
        recipe = resolve_model(catalog, str(local.resolve()) if local.is_dir() else selection.model)
        return catalog.with_recipe(recipe), selection.model_copy(update={"model": recipe.hf_id})


def _canonical_ids(catalog: Any, selection: Selection) -> Selection:
    """Hardware and variant ids as the catalog spells them (they are matched case-insensitively)."""
    from vllm_deploy_wizard.common.suggest import casefold_key

    update: dict[str, Any] = {}
    hw = casefold_key(selection.hardware, catalog.taxonomy.hardware_profiles)
    if hw is not None and hw != selection.hardware:
        update["hardware"] = hw
    variant = casefold_key(selection.variant, catalog.recipe(selection.model).variants)
    if variant is not None and variant != selection.variant:
        update["variant"] = variant
    return selection.model_copy(update=update) if update else selection


def check_ids(catalog: Any, selection: Selection) -> None:
    """Unknown ``kv_offload`` ids and feature keys are errors listing the valid ones with the closest.

    Raises:
        SelectionError: ``--kv-offload X: unknown KV offload id. Did you mean …? Valid: …`` or
            ``--feature X: unknown feature of RECIPE. Did you mean …? Valid: …``.
    """
    value = selection.kv_offload
    if value is not None and value not in ("none", "off"):
        valid = sorted([*catalog.taxonomy.kv_offload, *catalog.kv_stores])
        if value not in valid:
            hint = did_you_mean(value, valid, n=3)  # 'mooncake' → the kv_store ids
            raise SelectionError(f"--kv-offload {value!r}: unknown KV offload id{hint}. "
                                 f"Valid: none, {', '.join(valid)}")
    if isinstance(selection.features, list):
        recipe = catalog.recipe(selection.model)
        known = list(recipe.features)
        for key in [*selection.features, *selection.feature_modes]:
            if key not in recipe.features:
                hint = did_you_mean(key, known, n=3)
                raise SelectionError(f"--feature {key!r}: unknown feature of {recipe.hf_id}{hint}. "
                                     f"Valid: {', '.join(known) or '(this recipe has none)'}")
        for key, mode in selection.feature_modes.items():
            modes = recipe.features[key].modes or {}
            if mode not in modes:
                hint = did_you_mean(mode, list(modes), n=3)
                raise SelectionError(f"--feature {key}={mode}: unknown mode of {key}{hint}. "
                                     f"Valid: {', '.join(modes) or '(this feature has no modes)'}")


def apply_node_facts(catalog: Any, selection: Selection, host: HostCapacity | None) -> tuple[Any, Selection]:
    """Node facts on a CPU backend: devices = NUMA nodes with CPUs, per-device memory = one NUMA
    node's memory (the profile is replaced in a copy of the catalog; GPU profiles are unchanged).

    ``selection.gpus`` given by the person wins. No-op without ``host``, NUMA facts or a hardware
    id (the plan is then not known to be for this node).
    """
    if host is None or not host.numa_nodes:
        return catalog, selection
    hw = selection.hardware  # no hardware given: the plan is not known to be for this node
    profile = catalog.taxonomy.hardware_profiles.get(hw or "")
    if profile is None or profile.gen != "cpu":
        return catalog, selection
    devices = selection.gpus or host.numa_nodes
    update: dict[str, Any] = {}
    if host.numa_node_bytes:
        update["vram_gb"] = round(host.numa_node_bytes / 1e9 * profile.gpu_count, 1)
    if update:
        from .loader import Catalog

        tax = catalog.taxonomy.model_copy(update={"hardware_profiles": {
            **catalog.taxonomy.hardware_profiles, hw: profile.model_copy(update=update)}})
        catalog = Catalog(tax, catalog.strategies, catalog.kv_stores, catalog.recipes, catalog.source,
                          catalog.revision, catalog.recipes_revision)
    if selection.gpus is None and devices != profile.gpu_count:
        selection = selection.model_copy(update={"gpus": devices})
    return catalog, selection


def refusals_for(opts: Any, selection: Selection) -> list[Refusal]:
    """Each value given in ``selection`` whose choice ``opts`` disables or hides, with the reason.

    Checked: hardware, variant, strategy, nodes, KV offload (options, group members and Mooncake
    topologies), PD connector and router, PD pool modes and sizes, frontend, install mode, features and
    feature modes. Values the rows do not list (an omni recipe has no strategy row) are not checked.
    """
    out: list[Refusal] = []

    def check(key: str, flag: str, value: Any, choices: list, shown: str | None = None) -> None:
        if value is None:
            return
        hit = next((c for c in choices if c.id == str(value)), None)
        if hit is None or hit.state == "available":
            return
        reason = hit.reason or ("not offered for this selection" if hit.state == "hidden" else "not available")
        out.append(Refusal(key, flag, shown or str(value), reason, hit.unverified))

    for key, axis, flag in _AXES:
        check(key, flag, getattr(selection, key, None), opts.axis(axis))
    if selection.nodes is not None and opts.strategy:
        check("nodes", "--nodes", selection.nodes, opts.nodes)
    kv = selection.kv_offload
    if kv not in (None, "none", "off"):
        rows = [*opts.kv_offload, *(m for ms in opts.kv_offload_members.values() for m in ms),
                *opts.mooncake_topology]
        check("kv_offload", "--kv-offload", kv, rows)
    if selection.pd is not None:
        for role in ("prefill", "decode"):
            pool = getattr(selection.pd, role, None)
            if pool is not None and getattr(pool, "mode", None):
                check(f"pd.{role}", f"--pd-{role}", pool.mode, opts.pd_modes.get(role, []))
            if pool is not None and role in opts.pd_sizes:  # §3.2 N6: a pool size that can't run
                out.append(Refusal(f"pd.{role}", f"--pd-{role}", str(pool.nodes), opts.pd_sizes[role]))
    if isinstance(selection.features, list):
        for key in selection.features:
            check("features", "--feature", key, opts.features)
        for key, mode in selection.feature_modes.items():
            check("feature_modes", "--feature", mode, opts.feature_modes.get(key, []), f"{key}={mode}")
    return out


def rank_overflow(profile: Any, plan: Any, gpus: int | None) -> list[tuple[str, str, str]]:
    """``(flag, value, reason)`` per ``vllm serve`` process whose parallel sizes need more devices on
    its node than a node has, or [] (one per distinct argv shape).

    Devices a process needs on its node: :func:`vllm_deploy_wizard.common.parallelism.devices_on_node`
    (TP × PP × DP, spread over ``--nnodes``, or TP × PP × ``--data-parallel-size-local``); devices a node
    has: ``gpus`` (``plan --gpus``) or the profile's ``gpu_count`` (None/0 = unknown: nothing checked).
    Only CUDA profiles (:data:`.device_fit.FIXED_DEVICE_BRANDS`, not a CPU backend), as vLLM checks only
    there: elsewhere vLLM may see more devices than ``gpu_count`` (AMD partitions, NUMA nodes).
    Mirrors vLLM 0.32.0 ``vllm/config/parallel.py`` ``ParallelConfig.__post_init__`` ("World size (N) is
    larger than the number of available GPUs (M) in this node" when ``--nnodes`` is 1) and
    ``vllm/v1/worker/gpu_worker.py`` (``local_rank < device_count``). ``flag``/``value``: the flag that
    sets the largest size (``--tensor-parallel-size 16``); ``reason`` names the product and the devices
    per node (docs/catalog.md §3)."""
    from vllm_deploy_wizard.common.parallelism import (
        DATA_PARALLEL,
        DATA_PARALLEL_LOCAL,
        PIPELINE_PARALLEL,
        TENSOR_PARALLEL,
        devices_on_node,
    )

    from .backends import backend_for
    from .device_fit import FIXED_DEVICE_BRANDS

    count = gpus or (profile.gpu_count if profile is not None else None)
    if not count or profile is None or profile.brand not in FIXED_DEVICE_BRANDS \
            or backend_for(profile).key == "cpu":
        return []
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for proc in plan.processes:
        argv = list(proc.argv)
        need = devices_on_node(argv) if "serve" in argv[:3] else None
        if need is None or need <= count:
            continue
        sizes = [(names[0], last_flag_value(argv, *names))
                 for names in (TENSOR_PARALLEL, PIPELINE_PARALLEL, DATA_PARALLEL, DATA_PARALLEL_LOCAL)]
        given = [(flag, v) for flag, v in sizes if v is not None and v.isdigit() and int(v) > 1]
        if not given:
            continue
        flag, value = max(given, key=lambda fv: int(fv[1]))
        product = " × ".join(f"{f} {v}" for f, v in given)
        nodes = last_flag_value(argv, "--nnodes")
        spread = f" over --nnodes {nodes}" if nodes and nodes != "1" else ""
        source = f"--gpus {gpus}" if gpus else "the profile's gpu_count"
        product = "" if len(given) == 1 and not spread else f"{product}{spread} "
        reason = (f"{product}needs {need} devices per node, above the {count} devices per node "
                  f"({source}); vLLM will refuse to start. Lower the parallel sizes, or spread them over "
                  f"more nodes (--nodes with a multi_node_* strategy)")
        if reason not in seen:
            seen.add(reason)
            out.append((flag, value, reason))
    return out


#: Roles of the processes that run a vLLM engine on their node's devices.
_ENGINE_ROLES = ("serve", "head", "worker", "prefill", "decode")


def node_overflow(profile: Any, plan: Any, gpus: int | None) -> list[tuple[str, str, str]]:
    """``(node, processes, reason)`` per machine of ``plan`` whose ``vllm serve`` processes together
    use more devices than a node has, or [] — the node-level twin of :func:`rank_overflow`.

    vLLM checks its world size per process (:func:`rank_overflow`), so two engines placed on one
    machine — co-located prefill/decode pools (``pd_pool_nodes`` 0, both ``node-0``:
    :func:`.plan.node_label`) — each pass alone however many devices they need together. Per process
    the devices counted are the most of: the ids it pins (the profile's visibility variable, e.g.
    ``CUDA_VISIBLE_DEVICES=0,1,2,3`` → 4; a ``$PLACEHOLDER`` pin is not counted) and its ranks on the
    node (:func:`~vllm_deploy_wizard.common.parallelism.devices_on_node`, 1 without parallel-size flags).
    Machines with one engine are left to :func:`rank_overflow`. Devices a node has and the profiles
    checked are those of :func:`rank_overflow` (CUDA only). ``node``: the machine (``node-0``);
    ``processes``: their names joined with `` + ``; ``reason`` names each process with its devices,
    the total, the node's count and what fits (docs/catalog.md §3)."""
    from vllm_deploy_wizard.common.parallelism import devices_on_node

    from .backends import backend_for
    from .device_fit import FIXED_DEVICE_BRANDS
    from .plan import node_label

    count = gpus or (profile.gpu_count if profile is not None else None)
    if not count or profile is None or profile.brand not in FIXED_DEVICE_BRANDS \
            or backend_for(profile).key == "cpu":
        return []
    variables = backend_for(profile).visibility_vars
    by_node: dict[str, list[tuple[str, int, str]]] = {}
    for proc in plan.processes:
        argv = list(proc.argv)
        if proc.role not in _ENGINE_ROLES or "serve" not in argv[:3]:
            continue
        ranks = devices_on_node(argv) or 1
        var = next((v for v in variables if proc.env.get(v) and "$" not in proc.env[v]), None)
        pinned = [x for x in proc.env[var].split(",") if x.strip()] if var else []
        sizes = _parallel_words(argv)
        if pinned and len(pinned) >= ranks:
            how = f"{var}={proc.env[var]}"
        elif pinned:
            how = f"{sizes}; {var} pins {len(pinned)}"
        else:
            how = sizes or "TP 1: no parallel-size flags"
        by_node.setdefault(node_label(plan, proc), []).append((proc.name, max(ranks, len(pinned)), how))
    source = f"--gpus {gpus}" if gpus else "the profile's gpu_count"
    out: list[tuple[str, str, str]] = []
    for node, procs in by_node.items():
        total = sum(n for _, n, _ in procs)
        if len(procs) < 2 or total <= count:
            continue
        each = ", ".join(f"{name} uses {n} ({how})" for name, n, how in procs)
        share = count // len(procs)
        names = {name for name, _, _ in procs}
        tp_only = all(not _parallel_words(list(p.argv), tensor=False) for p in plan.processes if p.name in names)
        ways = []
        if share >= 1:
            ways.append(f"lower the parallel sizes (e.g. {share} devices each"
                        + (f": --arg=--tensor-parallel-size={share})" if tp_only else ")"))
        if all(p.role in ("prefill", "decode") for p in plan.processes if p.name in names):
            ways.append("give each pool a node of its own (--pd-prefill 1 --pd-decode 1)")
        fit = f"Fits: at most {count} together" + (f" — {', or '.join(ways)}" if ways else "")
        reason = (f"{each}: {total} devices together on {node}, above its {count} devices per node ({source}); "
                  f"vLLM checks each process on its own, not what one machine's processes need together. {fit}")
        out.append((node, " + ".join(name for name, _, _ in procs), reason))
    return out


def _parallel_words(argv: list[str], tensor: bool = True) -> str:
    """``--tensor-parallel-size 8 × --pipeline-parallel-size 2`` of the sizes above 1 ``argv`` sets on its
    node (``--data-parallel-size-local`` in place of ``--data-parallel-size`` when given; the tensor size
    left out when not ``tensor``), or ""."""
    from vllm_deploy_wizard.common.parallelism import (
        DATA_PARALLEL,
        DATA_PARALLEL_LOCAL,
        PIPELINE_PARALLEL,
        TENSOR_PARALLEL,
    )

    local = last_flag_value(argv, *DATA_PARALLEL_LOCAL)  # the DP ranks on this node when given
    axes = (*([TENSOR_PARALLEL] if tensor else []), PIPELINE_PARALLEL,
            DATA_PARALLEL_LOCAL if local is not None else DATA_PARALLEL)
    sizes = [(names[0], last_flag_value(argv, *names)) for names in axes]
    return " × ".join(f"{f} {v}" for f, v in sizes if v is not None and v.isdigit() and int(v) > 1)


def head_warnings(recipe: Any, plan: Any) -> list[str]:
    """A warning per ``vllm serve`` process whose ``--tensor-parallel-size`` does not divide its model's
    attention heads, when that model's config.json is local (a custom model, or a recipe model in
    the HF cache: :func:`.custom.find_config`; heads unknown otherwise), naming the TPs up to it that
    divide (one warning per model and TP). Mirrors vLLM 0.32.0 ``vllm/config/model.py``
    ``ModelConfig.verify_with_parallel_config`` (``total_num_attention_heads % tensor_parallel_size``;
    heads = the text config's ``num_attention_heads``), which refuses such a TP at start-up (docs/catalog.md §3)."""
    from .custom import find_config

    out: list[str] = []
    seen: set[tuple[str, int]] = set()  # one warning per (model, TP): a multi-node plan repeats the serve
    for proc in plan.processes:
        argv = list(proc.argv)
        value = last_flag_value(argv, "--tensor-parallel-size", "-tp")
        if value is None or not value.isdigit() or int(value) <= 1 or "serve" not in argv[:3]:
            continue
        i = argv.index("serve")
        model = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("-") else recipe.hf_id
        try:
            config = json.loads(find_config(model).read_text(encoding="utf-8"))
        except Exception:  # noqa: BLE001 — no readable local config.json: heads unknown
            continue
        text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
        heads = text.get("num_attention_heads") or text.get("n_head")
        tp = int(value)
        if not isinstance(heads, int) or heads <= 0 or heads % tp == 0 or (model, tp) in seen:
            continue
        seen.add((model, tp))
        fits = ", ".join(str(n) for n in range(1, tp) if heads % n == 0)
        out.append(f"warning: tensor parallel size {tp} ({proc.name}) does not divide the model's {heads} "
                   f"attention heads; vLLM will refuse to start — pick a TP that divides {heads} "
                   f"({fits}; --gpus, --nodes or --arg=--tensor-parallel-size)")
    return out
