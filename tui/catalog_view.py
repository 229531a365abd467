"""What the hardware and model screens list, computed from the catalog (pure, no Textual).

Rows are computed here, not in widgets, so the filters and marks are unit-testable and the screens
only paint. Field access goes through :func:`field` because recipes and profiles are pydantic models
from the catalog (docs/synthesis.md §1.1/§1.2) but a custom-model recipe or a test fake may be a
plain mapping.

Fit and verified marks (model screen):
- Only variants that run on the chosen hardware count (the catalog's variant rules,
  ``catalog.defaults.variant_runs_on``: not ``unsupported``, P1 precision, ``supported_hardware``;
  an nvfp4 variant limited to B200 is not counted on a CPU node). The memory is one node's: the
  detected machine's when the chosen profile is the detected one (host RAM or NUMA node memory on
  CPU, devices × memory on GPUs), else the profile's nominal per-node ``vram_gb``.
  ``yes``: the variant the plan lands on (``default`` when it runs there, else the largest running
  one, docs/constraints.md §3.1 H4) fits — the variant whose N5 check ``plan --detect`` makes;
  ``variant``: only a smaller running variant fits (:attr:`RecipeRow.fit_variant` names it);
  ``multi``: none fits, the recipe declares a multi-node/PD strategy and the profile is scalable;
  ``no``: none fits; ``none``: no variant runs there at all.
- *verified*: ``meta.hardware[hw] == "verified"`` (badge rule B1).

Filters, status and row order (model screen) are the catalog's
(:mod:`vllm_deploy_wizard.catalog.listing`, shared with ``vllm-wizard catalog models``): recipes
verified for the chosen hardware first, then the other available ones, then ``unlisted``, then
``disabled`` (:func:`listing_rank`); by provider then title within each group. Without a chosen
hardware every row is in the same group. The catalog is imported inside the functions: the hardware
screen imports this module before its first frame, and the catalog package brings pydantic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vllm_deploy_wizard.common.memory_labels import node_memory

#: Brand order of the hardware list after the detected profile's brand (docs/synthesis.md §2.14: NVIDIA
#: first, then AMD, then others alphabetical).
BRAND_ORDER = ("NVIDIA", "AMD")


def field(obj: Any, *path: str, default: Any = None) -> Any:
    """``obj.a.b`` or ``obj['a']['b']``; ``default`` when any step is missing/None."""
    for name in path:
        if obj is None:
            return default
        obj = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
    return default if obj is None else obj


@dataclass(frozen=True)
class ProfileRow:
    """One hardware profile as listed: ``id``, ``label`` ("H200 · 8×141 GB"), ``brand``,
    ``detected`` (the best detection candidate), ``quality`` (its match quality or "")."""

    id: str
    label: str
    brand: str
    detected: bool
    quality: str


def profile_groups(profiles: Mapping[str, Any], candidates: Iterable[Any] = (),
                   detected_size: str | None = None) -> list[tuple[str, list[ProfileRow]]]:
    """Profiles grouped by brand — the detected profile's brand first (the pick is in view without
    scrolling, also in the first frame), then NVIDIA, AMD and the others alphabetically — each group
    sorted by display name.

    ``candidates`` are detect's ranked ``Candidate(profile_id, quality, notes)``; the first one with
    a quality other than ``none`` is marked ``detected``. The detected profile is always listed,
    even when ``restricted`` (the H1 exception, docs/constraints.md §3.1). Each label carries the
    profile's own size ("4 dev, 954 GiB/node": its ``vram_gb`` in GiB,
    :func:`~vllm_deploy_wizard.common.memory_labels.node_memory`), except the detected profile's when ``detected_size``
    is given: what this node has ("1 dev, 16 GiB/node", the ★ detected mark follows it;
    :func:`vllm_deploy_wizard.tui.inventory_view.detected_node_size`).
    """
    best, quality = None, ""
    for cand in candidates:
        q = str(field(cand, "quality", default=""))
        if q and q != "none":
            best, quality = str(field(cand, "profile_id")), q
            break
    groups: dict[str, list[ProfileRow]] = {}
    for pid, prof in profiles.items():
        brand = str(field(prof, "brand", default="Other"))
        name = str(field(prof, "display_name", default=pid))
        count, vram = field(prof, "gpu_count"), field(prof, "vram_gb")
        size = f" · {count} dev, {node_memory(float(vram))}" if count and vram else ""
        if pid == best and detected_size:
            size = f" · {detected_size}"
        row = ProfileRow(pid, f"{name}{size}", brand, pid == best, quality if pid == best else "")
        groups.setdefault(brand, []).append(row)
    detected_brand = next((r.brand for rows in groups.values() for r in rows if r.detected), None)
    order = sorted(groups, key=lambda b: (b != detected_brand,
                                          BRAND_ORDER.index(b) if b in BRAND_ORDER else len(BRAND_ORDER), b))
    return [(b, sorted(groups[b], key=lambda r: r.label.lower())) for b in order]


@dataclass(frozen=True)
class RecipeRow:
    """One model as listed on the model screen. ``fits`` is ``yes``/``variant``/``multi``/``no``/``none``/``?``
    (``?`` = no hardware chosen); ``verified`` is True when the recipe marks the hardware verified."""

    hf_id: str
    title: str
    provider: str
    tasks: tuple[str, ...]
    architecture: str
    fits: str
    verified: bool
    listing: str = "available"
    """How the recipe stands on the chosen profile (``hardware_listing``): ``available``,
    ``unlisted`` (restricted profile the recipe does not list, offered because it was detected, H1)
    or ``disabled`` (H2/H3: no variant runs there); hidden recipes are not rows at all."""
    listing_reason: str = ""
    fit_variant: str = ""
    """For ``fits == "variant"``: the key of the smallest variant running here that fits."""

    @property
    def status(self) -> str:
        """``verified``/``available``/``unlisted``/``unsupported``
        (:func:`vllm_deploy_wizard.catalog.listing.status_of`, the rule ``catalog models`` uses)."""
        from vllm_deploy_wizard.catalog.listing import status_of

        return status_of(self.listing, self.verified)


def listing_rank(row: RecipeRow) -> int:
    """Where ``row``'s group sorts on the model screen: 0 verified on the hardware, 1 available,
    2 ``unlisted``, 3 ``disabled`` (:func:`vllm_deploy_wizard.catalog.listing.status_rank`: the
    listing state wins over the verified mark)."""
    from vllm_deploy_wizard.catalog.listing import status_rank

    return status_rank(row.status)


def _runs_here(recipe: Any, variant: Any, hw_id: str | None, profile: Any) -> bool:
    """Whether ``variant`` runs on ``hw_id`` by the catalog's variant rules
    (:func:`vllm_deploy_wizard.catalog.defaults.variant_runs_on`: not ``unsupported``, P1 precision,
    the ``supported_hardware`` allowlist) — memory is left out here, the Fit mark judges it. A plain
    mapping (custom model, test fake) has no rules to check and counts as running."""
    if hw_id is None or isinstance(recipe, Mapping) or isinstance(variant, Mapping) or isinstance(profile, Mapping):
        return True
    from vllm_deploy_wizard.catalog.defaults import variant_runs_on

    return variant_runs_on(recipe, variant, hw_id, profile, vram=float("inf"))


def _fits(recipe: Any, profile: Any, have_gb: float | None = None, hw_id: str | None = None) -> tuple[str, str]:
    """``(mark, variant key)``: the mark of :class:`RecipeRow` ``fits`` and, for ``variant``, the
    smallest running variant that fits."""
    if profile is None:
        return "?", ""
    have = have_gb if have_gb is not None else field(profile, "vram_gb")
    variants = field(recipe, "variants", default={}) or {}
    running = {k: v for k, v in variants.items() if _runs_here(recipe, v, hw_id, profile)}
    if variants and not running:
        return "none", ""
    needs = {k: n for k, v in running.items() if isinstance(n := field(v, "vram_minimum_gb"), (int, float))}
    if have is None or not needs:
        return "yes", ""
    # the variant the plan lands on (docs/constraints.md §3.1 H4): ``default`` when it runs here,
    # else the largest running one — the one `plan --detect` checks N5 for
    landing = "default" if "default" in running else max(needs, key=lambda k: needs[k])
    if needs.get(landing, 0) <= have:
        return "yes", ""
    smaller = [k for k in needs if needs[k] <= have]
    if smaller:
        return "variant", min(smaller, key=lambda k: needs[k])
    strategies = field(recipe, "compatible_strategies", default=[]) or []
    multi = any(str(s).startswith("multi_node") or s == "pd_cluster" for s in strategies)
    return ("multi" if multi and field(profile, "scalable", default=True) is not False else "no"), ""


def recipe_rows(
    recipes: Mapping[str, Any],
    profile: Any = None,
    hardware_id: str | None = None,
    query: str = "",
    task: str = "",
    architecture: str = "",
    have_gb: float | None = None,
    listing: Callable[[Any], tuple[str, str | None]] | None = None,
) -> list[RecipeRow]:
    """The rows of :func:`vllm_deploy_wizard.catalog.listing.model_rows` (filters: ``query`` —
    every blank-separated word a substring of title, HF id or provider —, ``task`` one of
    :data:`~vllm_deploy_wizard.catalog.listing.TASKS` or "", ``architecture`` ``dense``/``moe``/""; order:
    verified on ``hardware_id`` first, then available, unlisted, disabled, each group by provider then title),
    with the Fit mark.

    ``have_gb``: the memory (GB) fit is measured against instead of the profile's nominal
    ``vram_gb`` — the detected machine's (see ``inventory_view.detected_memory_gb``).
    ``listing(recipe) -> (state, reason)``: the hardware gate for the profile
    (``catalog.constraints.hardware_listing``); ``hidden`` recipes are left out, the others carry
    their state in :attr:`RecipeRow.listing`."""
    from vllm_deploy_wizard.catalog.listing import model_rows

    rows = []
    for r in model_rows(recipes, hardware_id, query, task, architecture, listing):
        fits, fit_variant = _fits(r.recipe, profile, have_gb, hardware_id)
        rows.append(RecipeRow(r.hf_id, r.title, r.provider, r.tasks, r.architecture, fits, r.verified,
                              r.listing, r.listing_reason, fit_variant))
    return rows
