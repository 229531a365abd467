"""Turn the constraints API's answer into the rows the configure screen shows.

``options(catalog, selection)`` (contracts §1) answers, for every axis of the selection, a list of
``Choice(id, label, state, reason)`` plus ``warnings``. The screen must not know each axis by hand —
new axes the catalog adds must appear without a TUI change — so this module walks the answer
generically: any attribute (or mapping key) whose value is a list of choice-like objects is an axis.
Only the *order* and the *titles* of well-known axes, and how a picked id becomes a selection value
(``nodes`` is an int, ``features`` a list, a modal feature a ``feature_modes`` entry) are fixed here.

Pure functions only; no Textual import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

#: Axis order and titles on the configure screen (recipes-synthesis §3.1 row order). Axes not named
#: here follow in the order the constraints API gives them, titled from their key.
AXIS_TITLES: dict[str, str] = {
    "variant": "Variant",
    "strategy": "Strategy",
    "nodes": "Nodes",
    "pd_prefill_nodes": "PD prefill nodes",
    "pd_prefill_mode": "PD prefill mode",
    "pd_decode_nodes": "PD decode nodes",
    "pd_decode_mode": "PD decode mode",
    "connector": "PD connector",
    "router": "Router",
    "kv_offload": "KV offload",
    "kv_instances": "KV instances",
    "frontend": "Frontend",
    "features": "Features",
    "install_mode": "Install",
    "advanced": "Advanced args",
}

#: Axes whose value is a set of ids (toggled, not picked).
MULTI_AXES = frozenset({"features", "advanced", "advanced_args"})

#: Axes the configure screen does not show (they have their own screens).
OTHER_SCREENS = frozenset({"hardware", "model", "task_filter"})


@dataclass(frozen=True)
class ChoiceView:
    """One pickable value of an axis as shown: ``state`` is ``available``/``disabled`` (hidden
    choices are dropped), ``reason`` the one-line text of recipes-synthesis §3 or ``""``."""

    id: str
    label: str
    state: str
    reason: str
    selected: bool


@dataclass(frozen=True)
class AxisView:
    """One row of the configure screen: ``key`` is the selection field (or ``feature:<name>`` for a
    modal feature's mode), ``multi`` whether several ids may be on."""

    key: str
    title: str
    multi: bool
    choices: tuple[ChoiceView, ...]


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _is_choice(obj: Any) -> bool:
    return _get(obj, "id") is not None and _get(obj, "state") is not None


def _raw_axes(opts: Any) -> list[tuple[str, Any]]:
    """``(key, value)`` pairs of ``opts`` whose value is an axis (a list of choices) or a mapping of
    such (feature modes)."""
    axes = _get(opts, "axes")
    if axes is not None:
        source = axes.items() if isinstance(axes, Mapping) else ((_get(a, "key") or _get(a, "name"), _get(a, "choices")) for a in axes)
    elif isinstance(opts, Mapping):
        source = opts.items()
    elif hasattr(opts, "model_fields"):
        source = ((name, getattr(opts, name)) for name in type(opts).model_fields)
    else:
        source = vars(opts).items()
    out = []
    for key, value in source:
        if key in ("warnings", "notes"):
            continue
        if isinstance(value, (list, tuple)) and value and all(_is_choice(c) for c in value):
            out.append((key, value))
        elif isinstance(value, Mapping) and value and all(
            isinstance(v, (list, tuple)) and all(_is_choice(c) for c in v) for v in value.values()
        ):
            for sub, choices in value.items():
                out.append((f"{key}:{sub}", choices))
    return out


def current_value(selection: Mapping[str, Any], key: str) -> Any:
    """The selection's current value for axis ``key`` (``feature_modes:<f>`` → the mode of f)."""
    if ":" in key:
        group, sub = key.split(":", 1)
        container = selection.get(group if group.endswith("modes") else "feature_modes") or {}
        return container.get(sub)
    return selection.get(key)


def axis_views(opts: Any, selection: Mapping[str, Any]) -> list[AxisView]:
    """Every axis of ``opts`` as :class:`AxisView`, hidden choices dropped, empty axes dropped.

    ``selected`` marks the selection's current value; where the selection leaves an axis unset,
    a choice the API flags ``selected``/``default`` is marked instead.
    """
    order = {k: i for i, k in enumerate(AXIS_TITLES)}
    views = []
    for index, (key, choices) in enumerate(_raw_axes(opts)):
        if key in OTHER_SCREENS:
            continue
        multi = key in MULTI_AXES
        value = current_value(selection, key)
        picked: set[str] = set()
        if multi and isinstance(value, (list, tuple, set)):
            picked = {str(v) for v in value}
        elif value is not None and not multi:
            picked = {str(value)}
        shown = []
        for c in choices:
            state = str(_get(c, "state"))
            if state == "hidden":
                continue
            cid = str(_get(c, "id"))
            api_selected = bool(_get(c, "selected", False) or _get(c, "active", False))
            selected = cid in picked if (picked or value is not None) else api_selected
            shown.append(ChoiceView(cid, str(_get(c, "label") or cid), state, str(_get(c, "reason") or ""), selected))
        if not shown:
            continue
        base = key.split(":", 1)
        title = AXIS_TITLES.get(key) or (
            f"{base[1].replace('_', ' ').capitalize()} mode" if len(base) == 2 else key.replace("_", " ").capitalize()
        )
        views.append((order.get(base[0], len(order) + index), index, AxisView(key, title, multi, tuple(shown))))
    return [v for _, _, v in sorted(views, key=lambda t: (t[0], t[1]))]


def warnings_of(opts: Any) -> list[str]:
    """The banners of ``opts`` (N5 insufficient VRAM, TP hints, …) as plain strings."""
    out = []
    for w in _get(opts, "warnings") or []:
        out.append(str(_get(w, "text") or _get(w, "message") or w) if not isinstance(w, str) else w)
    return out


def apply_choice(selection: dict[str, Any], key: str, choice_id: str, multi: bool) -> dict[str, Any]:
    """A new selection with axis ``key`` set to ``choice_id`` (toggled for multi axes).

    ``nodes``-like axes become ints; ``feature_modes:<f>`` sets one mode; ``features`` toggles one
    key in the resolved list (a missing list starts from the axis' currently-on choices, which the
    caller passes in ``selection['features']`` when known). Raises nothing: ids come from the API.
    """
    new = dict(selection)
    if ":" in key:
        group, sub = key.split(":", 1)
        field = group if group.endswith("modes") else "feature_modes"
        modes = dict(new.get(field) or {})
        modes[sub] = choice_id
        new[field] = modes
        return new
    if multi:
        current = list(new.get(key) or [])
        if choice_id in current:
            current.remove(choice_id)
        else:
            current.append(choice_id)
        new[key] = current
        return new
    value: Any = choice_id
    if key.endswith("nodes") or key in ("gpus", "kv_instances"):
        try:
            value = int(choice_id)
        except ValueError:
            pass
    new[key] = value
    return new


def initial_multi(views: Iterable[AxisView], key: str) -> list[str]:
    """Ids currently on for multi axis ``key`` (used to seed ``features`` before the first toggle)."""
    for v in views:
        if v.key == key:
            return [c.id for c in v.choices if c.selected]
    return []
