"""What a model list shows for a hardware profile: each recipe's status there, the search, task and
architecture filters, and the order. One place for the wizard's model screen and
``vllm-wizard catalog models``.

Status of a recipe on profile ``hw`` (:func:`hardware_status`, built on
:func:`.constraints.hardware_listing`, docs/constraints.md §3.1):

- ``unsupported``: H2 (``meta.hardware[hw] == "unsupported"``) or H3/H5 (no variant runs there);
- ``unlisted``: H1 — a restricted profile the recipe does not list, offered only because it is the
  detected profile (the plan then warns, or needs ``--allow-unverified`` without ``--detect``);
- ``verified``: ``meta.hardware[hw] == "verified"`` (B1) and none of the above;
- ``available``: none of the above;
- ``hidden``: H1 — a restricted profile the recipe does not list and not the detected one; a model
  list leaves the recipe out.

The listing state wins over the verified mark (:func:`status_of`). Order (:func:`model_rows`):
verified, available, unlisted, unsupported (:data:`STATUS_RANK`); by provider then title inside each
group, case ignored. Without a hardware profile every row is ``available`` and in one group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from .constraints import AVAILABLE, DISABLED, HIDDEN, hardware_listing
from .models.recipe import ARCHITECTURES as RECIPE_ARCHITECTURES

VERIFIED = "verified"
UNLISTED = "unlisted"
UNSUPPORTED = "unsupported"

#: Group order of a model list (lower first); ``hidden`` recipes are not listed.
STATUS_RANK: Mapping[str, int] = {VERIFIED: 0, AVAILABLE: 1, UNLISTED: 2, UNSUPPORTED: 3}

#: Task filter values of the wizard (docs/synthesis.md §1.1 ``meta.tasks``), the seeds' taxonomy tasks.
TASKS = ("text", "multimodal", "omni", "embedding")

#: Architecture filter values (``model.architecture``).
ARCHITECTURES = RECIPE_ARCHITECTURES


def status_of(listing: str, verified: bool) -> str:
    """The status of a recipe from its :func:`.constraints.hardware_listing` state (``available``,
    ``unlisted``, ``disabled``, ``hidden``) and whether the recipe marks the profile verified:
    ``disabled`` → ``unsupported``, ``unlisted`` and ``hidden`` stay, ``available`` →
    ``verified`` when ``verified`` else ``available``."""
    if listing == DISABLED:
        return UNSUPPORTED
    if listing in (UNLISTED, HIDDEN):
        return listing
    return VERIFIED if verified else AVAILABLE


def hardware_status(catalog: Any, recipe: Any, hw_id: str, detected: str | None = None) -> tuple[str, str | None]:
    """``(status, reason)`` of ``recipe`` on profile ``hw_id`` (see the module docstring); ``reason``
    is the §3.1 text for ``unsupported`` and ``unlisted``, else None. ``detected``: the detected
    profile id (the H1 exception). Raises KeyError for an unknown ``hw_id``."""
    listing, reason = hardware_listing(catalog, recipe, hw_id, detected)
    verified = str((recipe.meta.hardware or {}).get(hw_id, "")) == VERIFIED
    return status_of(listing, verified), reason


def profile_selectable(profile: Any, hw_id: str, detected: str | None = None) -> bool:
    """Whether any model can be planned on ``profile`` (id ``hw_id``) as far as rule H1 goes: it is
    not ``restricted``, or it is the ``detected`` profile. A restricted profile is otherwise offered
    only to the recipes that list it in ``meta.hardware`` (docs/constraints.md §3.1 H1)."""
    return not bool(_get(profile, "restricted", default=False)) or hw_id == detected


def listing_for(catalog: Any, hw_id: str, detected: str | None = None) -> Callable[[Any], tuple[str, str | None]]:
    """The ``listing`` argument of :func:`model_rows` for profile ``hw_id``:
    ``recipe -> hardware_listing(catalog, recipe, hw_id, detected)``."""
    def listing(recipe: Any) -> tuple[str, str | None]:
        return hardware_listing(catalog, recipe, hw_id, detected)

    return listing


def _get(obj: Any, *path: str, default: Any = None) -> Any:
    """``obj.a.b`` or ``obj['a']['b']`` (recipes are pydantic models; a test fake may be a mapping)."""
    for name in path:
        if obj is None:
            return default
        obj = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
    return default if obj is None else obj


def verified_profiles(recipe: Any, profiles: Iterable[str]) -> tuple[str, ...]:
    """The ids of ``profiles`` (in their order) that ``recipe`` marks ``verified`` in ``meta.hardware``."""
    marks = _get(recipe, "meta", "hardware", default={}) or {}
    return tuple(hw for hw in profiles if str(marks.get(hw, "")) == VERIFIED)


def search_matches(query: str, *texts: str) -> bool:
    """True when every blank-separated word of ``query`` is a substring of one of ``texts``
    (case ignored); an empty query matches everything."""
    hay = " ".join(texts).lower()
    return all(w in hay for w in query.lower().split())


@dataclass(frozen=True)
class ModelRow:
    """One recipe as a model list shows it.

    ``tasks``: ``meta.tasks``; ``architecture``: ``dense``/``moe``/""; ``variants``: variant keys;
    ``listing``: the :func:`.constraints.hardware_listing` state on the chosen profile
    (``available``/``unlisted``/``disabled``) and ``listing_reason`` its text; ``verified``: the
    recipe marks the chosen profile verified; ``recipe``: the recipe itself."""

    hf_id: str
    title: str
    provider: str
    tasks: tuple[str, ...]
    architecture: str
    variants: tuple[str, ...]
    verified: bool
    listing: str = AVAILABLE
    listing_reason: str = ""
    recipe: Any = field(default=None, compare=False, repr=False)

    @property
    def status(self) -> str:
        """``verified``/``available``/``unlisted``/``unsupported`` (:func:`status_of`)."""
        return status_of(self.listing, self.verified)


def status_rank(status: str) -> int:
    """Where a row of ``status`` sorts (:data:`STATUS_RANK`); unknown statuses last."""
    return STATUS_RANK.get(status, len(STATUS_RANK))


def model_rows(
    recipes: Mapping[str, Any],
    hardware_id: str | None = None,
    query: str = "",
    task: str = "",
    architecture: str = "",
    listing: Callable[[Any], tuple[str, str | None]] | None = None,
) -> list[ModelRow]:
    """The recipes of ``recipes`` (``hf_id → recipe``) a model list shows, in its order.

    Filters: ``query`` (:func:`search_matches` over title, HF id and provider), ``task`` (one of
    ``meta.tasks``, "" = any), ``architecture`` (``dense``/``moe``, "" = any).
    ``listing(recipe) -> (state, reason)``: the hardware gate of the chosen profile
    (``lambda r: hardware_listing(catalog, r, hardware_id, detected)``); ``hidden`` recipes are
    left out. Without it every recipe is ``available``. ``hardware_id``: the chosen profile, for
    the verified mark. Rows are grouped by :func:`status_rank`, then by provider and title."""
    rows = []
    for hf_id, rec in recipes.items():
        rid = str(_get(rec, "hf_id", default=hf_id))
        title = str(_get(rec, "meta", "title", default=hf_id))
        provider = str(_get(rec, "meta", "provider", default=hf_id.split("/")[0]))
        if rid.startswith("/"):  # a custom local directory
            provider, title = "local", PurePath(rid).name or title
        if not search_matches(query, title, hf_id, provider):
            continue
        tasks = tuple(str(t) for t in _get(rec, "meta", "tasks", default=()) or ())
        if task and task not in tasks:
            continue
        arch = str(_get(rec, "model", "architecture", default=""))
        if architecture and arch != architecture:
            continue
        state, reason = listing(rec) if listing is not None else (AVAILABLE, None)
        if state == HIDDEN:
            continue
        verified = bool(hardware_id and verified_profiles(rec, (hardware_id,)))
        variants = tuple(str(k) for k in (_get(rec, "variants", default={}) or {}))
        rows.append(ModelRow(rid, title, provider, tasks, arch, variants, verified, str(state), reason or "", rec))
    return sorted(rows, key=lambda r: (status_rank(r.status), r.provider.lower(), r.title.lower()))
