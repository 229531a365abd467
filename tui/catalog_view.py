"""What the hardware and model screens list, computed from the catalog (pure, no Textual).

Rows are computed here, not in widgets, so the filters and marks are unit-testable and the screens
only paint. Field access goes through :func:`field` because recipes and profiles are pydantic models
from the catalog (docs/synthesis.md §1.1/§1.2) but a custom-model recipe or a test fake may be a
plain mapping.

Fit and verified marks (model screen):
- *fits*: some variant's ``vram_minimum_gb`` ≤ the memory of one node — the detected machine's when
  the chosen profile is the detected one (host RAM on CPU, devices × memory on GPUs), else the
  profile's nominal per-node ``vram_gb`` — or the
  recipe declares a multi-node/PD strategy and the profile is scalable (``multi``); else ``no``.
  Precision gates (P1) are left to the constraints API on the next screen.
- *verified*: ``meta.hardware[hw] == "verified"`` (badge rule B1).

Row order (model screen): recipes verified for the chosen hardware first, then the other available
ones, then ``unlisted``, then ``disabled`` (:func:`listing_rank`); by provider then title within each
group. Without a chosen hardware every row is in the same group.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Callable, Iterable, Mapping

#: Brand order of the hardware list (docs/synthesis.md §2.14: NVIDIA first, then AMD, then others alphabetical).
BRAND_ORDER = ("NVIDIA", "AMD")

#: Task filter values (docs/synthesis.md §1.1 ``meta.tasks``); "" = any.
TASKS = ("text", "multimodal", "omni", "embedding")


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


def profile_groups(profiles: Mapping[str, Any], candidates: Iterable[Any] = ()) -> list[tuple[str, list[ProfileRow]]]:
    """Profiles grouped by brand (NVIDIA, AMD, then alphabetical), each group sorted by display name.

    ``candidates`` are detect's ranked ``Candidate(profile_id, quality, notes)``; the first one with
    a quality other than ``none`` is marked ``detected``. The detected profile is always listed,
    even when ``restricted`` (the H1 exception, docs/constraints.md §3.1).
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
        size = f" · {count} dev, {vram:g} GB/node" if count and vram else ""
        groups.setdefault(brand, []).append(ProfileRow(pid, f"{name}{size}", brand, pid == best, quality if pid == best else ""))
    order = sorted(groups, key=lambda b: (BRAND_ORDER.index(b) if b in BRAND_ORDER else len(BRAND_ORDER), b))
    return [(b, sorted(groups[b], key=lambda r: r.label.lower())) for b in order]


@dataclass(frozen=True)
class RecipeRow:
    """One model as listed on the model screen. ``fits`` is ``yes``/``multi``/``no``/``?``
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


def listing_rank(row: RecipeRow) -> int:
    """Where ``row``'s group sorts on the model screen: 0 verified on the hardware, 1 available,
    2 ``unlisted``, 3 ``disabled`` (the same precedence as the Status column: the listing state wins
    over the verified mark)."""
    if row.listing == "disabled":
        return 3
    if row.listing == "unlisted":
        return 2
    return 0 if row.verified else 1


def _fits(recipe: Any, profile: Any, have_gb: float | None = None) -> str:
    if profile is None:
        return "?"
    have = have_gb if have_gb is not None else field(profile, "vram_gb")
    needs = [field(v, "vram_minimum_gb") for v in (field(recipe, "variants", default={}) or {}).values()]
    needs = [n for n in needs if isinstance(n, (int, float))]
    if have is None or not needs or min(needs) <= have:
        return "yes"
    strategies = field(recipe, "compatible_strategies", default=[]) or []
    multi = any(str(s).startswith("multi_node") or s == "pd_cluster" for s in strategies)
    return "multi" if multi and field(profile, "scalable", default=True) is not False else "no"


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
    """Recipes matching ``query`` (case-insensitive substring of title, HF id or provider; every
    blank-separated word must match), ``task`` (one of :data:`TASKS` or "" for any) and
    ``architecture`` (``dense``/``moe``/""), grouped by :func:`listing_rank` (verified on
    ``hardware_id`` first, then available, unlisted, disabled), each group by provider then title.

    ``have_gb``: the memory (GB) fit is measured against instead of the profile's nominal
    ``vram_gb`` — the detected machine's (see ``inventory_view.detected_memory_gb``).
    ``listing(recipe) -> (state, reason)``: the hardware gate for the profile
    (``catalog.constraints.hardware_listing``); ``hidden`` recipes are left out, the others carry
    their state in :attr:`RecipeRow.listing`."""
    words = query.lower().split()
    rows = []
    for hf_id, rec in recipes.items():
        title = str(field(rec, "meta", "title", default=hf_id))
        provider = str(field(rec, "meta", "provider", default=hf_id.split("/")[0]))
        if str(field(rec, "hf_id", default=hf_id)).startswith("/"):  # a custom local directory
            provider, title = "local", PurePath(str(field(rec, "hf_id", default=hf_id))).name or title
        hay = f"{title} {hf_id} {provider}".lower()
        if any(w not in hay for w in words):
            continue
        tasks = tuple(str(t) for t in field(rec, "meta", "tasks", default=()) or ())
        if task and task not in tasks:
            continue
        arch = str(field(rec, "model", "architecture", default=""))
        if architecture and arch != architecture:
            continue
        hw_status = field(rec, "meta", "hardware", default={}) or {}
        verified = bool(hardware_id) and str(hw_status.get(hardware_id, "")) == "verified"
        state, reason = listing(rec) if listing is not None else ("available", None)
        if state == "hidden":
            continue
        rows.append(RecipeRow(str(field(rec, "hf_id", default=hf_id)), title, provider, tasks, arch,
                              _fits(rec, profile, have_gb), verified, str(state), reason or ""))
    return sorted(rows, key=lambda r: (listing_rank(r), r.provider.lower(), r.title.lower()))
