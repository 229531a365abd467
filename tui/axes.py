"""Turn the constraints answer (``options(catalog, selection) -> Options``) into configure-screen rows,
and a pick on a row back into a selection.

``Options`` (catalog/constraints/) holds one ``list[Choice]`` per axis, ``dict[str, list[Choice]]``
for per-role/per-feature sub-rows (``pd_modes``, ``kv_offload_members``, ``feature_modes``), the
current values after defaults in ``resolved``, and ``warnings``. :data:`AXES` says for each known axis
its title, which selection key a pick writes and how; an axis the catalog adds later that this table
does not know is still shown (generic single-pick writing the same-named selection key), so the
screen never hides a choice.

Rules that are the wizard's, not the catalog's (docs/synthesis.md §2.9 pill/sub-row UI):
- the KV offload row holds ``none``, options, *group* ids and ``mooncake``; picking a group or
  ``mooncake`` selects its first available member/topology, and the matching sub-row is shown only
  while that group/Mooncake is the active pill;
- Advanced presets are toggles of their ``args`` inside ``advanced_args`` (on = the args appear as a
  contiguous run in front of the typed ones, so a flag the person typed wins; off removes that run),
  so free-text args typed by the person are kept;
- picking the active frontend again turns the frontend off (``frontend: null``, docs/plan-file.md §2);
- a row the person has not picked shows the value that will be used: ``resolved`` (PD pool modes
  ``resolved["pd_modes"]``, feature modes ``resolved["feature_modes"]``, KV offload, set-axes).

Pure functions only; no Textual import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Known axes in screen order: attribute of Options → (title, kind). Kinds: ``set:<key>`` writes the
#: selection key, ``int:<key>`` writes it as int, ``multi`` toggles ids in a list, ``special`` is
#: handled by :func:`apply_choice` by axis name.
AXES: dict[str, tuple[str, str]] = {
    "variant": ("Variant", "set:variant"),
    "strategy": ("Strategy", "set:strategy"),
    "nodes": ("Nodes", "int:nodes"),
    "pd_modes": ("PD {sub} pool mode", "special"),
    "pd_connector": ("PD connector", "set:connector"),
    "pd_router": ("PD router", "set:router"),
    "kv_offload": ("KV offload", "special"),
    "kv_offload_members": ("KV offload · {sub}", "set:kv_offload"),
    "mooncake_topology": ("Mooncake topology", "set:kv_offload"),
    "frontend": ("Frontend", "special"),
    "features": ("Features", "multi"),
    "feature_modes": ("Feature {sub} mode", "special"),
    "install_mode": ("Install", "set:install_mode"),
    "advanced": ("Advanced presets", "special"),
}

#: Axes other screens own.
OTHER_SCREENS = frozenset({"hardware"})

#: Selection keys that, when changed, make later defaults apply again (so the catalog re-resolves).
RESET_AFTER = {
    "variant": (),
    "strategy": ("pd", "connector", "router"),
    "nodes": ("strategy", "pd", "connector", "router"),  # a strategy picked for another node count resets
}


@dataclass(frozen=True)
class ChoiceView:
    """One choice as shown: ``state`` ``available``/``disabled`` (hidden ones are dropped),
    ``reason`` the one-line §3 text, ``warning`` a caveat on an available choice, ``selected``."""

    id: str
    label: str
    state: str
    reason: str
    warning: str
    selected: bool
    args: tuple[str, ...] = ()
    unverified: bool = False
    """The choice lacks only a recorded verified run (docs/catalog.md §4): disabled = ctrl+u
    (allow unverified) opens it; available = it was opened and the plan marks it unverified."""


@dataclass(frozen=True)
class AxisView:
    """One row: ``key`` is ``<axis>`` or ``<axis>:<sub>`` (``pd_modes:prefill``,
    ``feature_modes:reasoning``), ``multi`` whether several choices may be on."""

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


def _raw_axes(opts: Any) -> list[tuple[str, str | None, list]]:
    """``(axis, sub, choices)`` for every list-of-choices attribute of ``opts`` (known order first)."""
    if isinstance(opts, Mapping):
        names = list(opts)
    elif hasattr(opts, "__dataclass_fields__"):
        names = list(opts.__dataclass_fields__)
    elif hasattr(opts, "model_fields"):
        names = list(type(opts).model_fields)
    else:
        names = list(vars(opts))
    order = {k: i for i, k in enumerate(AXES)}
    position = {n: i for i, n in enumerate(names)}
    names = sorted(names, key=lambda n: (order.get(n, len(order)), position[n]))
    out: list[tuple[str, str | None, list]] = []
    for name in names:
        value = _get(opts, name)
        if isinstance(value, (list, tuple)) and value and all(_is_choice(c) for c in value):
            out.append((name, None, list(value)))
        elif isinstance(value, Mapping) and value and all(isinstance(v, (list, tuple)) for v in value.values()):
            for sub, choices in value.items():
                if choices and all(_is_choice(c) for c in choices):
                    out.append((name, str(sub), list(choices)))
    return out


def _contains_run(haystack: list[str], run: tuple[str, ...]) -> int:
    """Index where ``run`` appears contiguously in ``haystack``, or -1."""
    n = len(run)
    if not n:
        return -1
    for i in range(len(haystack) - n + 1):
        if tuple(haystack[i : i + n]) == run:
            return i
    return -1


def _current(axis: str, sub: str | None, selection: Mapping[str, Any], resolved: Mapping[str, Any],
             features: list[str] | None) -> Any:
    kind = AXES.get(axis, (None, f"set:{axis}"))[1]
    if axis == "pd_modes":  # the picked mode, else the pool's default the catalog resolved (§2.6/§2.14)
        picked = ((selection.get("pd") or {}).get(sub) or {}).get("mode")
        return picked or (resolved.get("pd_modes") or {}).get(sub)
    if axis == "feature_modes":  # the picked mode, else resolveModeKey's default (§2.8)
        picked = (selection.get("feature_modes") or {}).get(sub)
        return picked or (resolved.get("feature_modes") or {}).get(sub)
    if axis == "features":
        chosen = selection.get("features")
        return chosen if isinstance(chosen, list) else (features or [])
    if axis in ("kv_offload", "kv_offload_members", "mooncake_topology"):
        return selection.get("kv_offload") or resolved.get("kv_offload") or "none"
    if axis == "frontend":
        return selection.get("frontend")
    if kind.startswith(("set:", "int:")):
        key = kind.split(":", 1)[1]
        value = selection.get(key, resolved.get(key))
        return None if value is None else str(value)
    return selection.get(axis)


def axis_views(opts: Any, selection: Mapping[str, Any], features: list[str] | None = None,
               frontend_default: str | None = None) -> list[AxisView]:
    """Every shown row for ``opts``; hidden choices and empty rows dropped; sub-rows of KV groups and
    Mooncake only while their pill is active. ``features`` = the resolved feature list (from the
    plan) used to mark features on when the selection leaves them at their default.
    ``frontend_default`` = the frontend the plan runs with when none is picked (``python``: vLLM's
    default; ``rust`` when the recipe's env switches it on, docs/synthesis.md §4.2): marked, its label saying so."""
    resolved = _get(opts, "resolved") or {}
    kv_now = selection.get("kv_offload") or resolved.get("kv_offload") or "none"
    members = _get(opts, "kv_offload_members") or {}
    active_group = next((g for g, ms in members.items() if any(_get(m, "id") == kv_now for m in ms)), None)
    topo_ids = {_get(c, "id") for c in (_get(opts, "mooncake_topology") or [])}
    views = []
    for axis, sub, choices in _raw_axes(opts):
        if axis in OTHER_SCREENS:
            continue
        if axis == "kv_offload_members" and sub != active_group:
            continue
        if axis == "mooncake_topology" and kv_now not in topo_ids:
            continue
        title, kind = AXES.get(axis, (axis.replace("_", " ").capitalize() + (" {sub}" if sub else ""), f"set:{axis}"))
        multi = kind == "multi" or axis == "advanced"
        current = _current(axis, sub, selection, resolved, features)
        adv = list(selection.get("advanced_args") or [])
        shown = []
        for c in choices:
            state = str(_get(c, "state"))
            if state == "hidden":
                continue
            cid = str(_get(c, "id"))
            args = tuple(_get(c, "args") or ())
            if axis == "advanced":
                selected = _contains_run(adv, args) >= 0
            elif axis == "kv_offload":
                selected = cid == kv_now or cid == active_group or (cid == "mooncake" and kv_now in topo_ids)
            elif multi:
                selected = cid in (current or [])
            else:
                selected = current is not None and cid == str(current)
            label = str(_get(c, "label") or cid)
            if axis == "variant":
                label = variant_name(label, cid)
            if axis == "frontend" and not selection.get("frontend") and cid == frontend_default:
                selected = True
                label += (" (default — nothing picked: vLLM's own frontend)" if cid == "python"
                          else " (default — the recipe's env turns it on)")
            shown.append(ChoiceView(cid, label, state, str(_get(c, "reason") or ""),
                                    str(_get(c, "warning") or ""), selected, args,
                                    bool(_get(c, "unverified", False))))
        if shown:
            key = f"{axis}:{sub}" if sub else axis
            views.append(AxisView(key, title.format(sub=sub or ""), multi, tuple(shown)))
    return views


def variant_name(label: str, key: str) -> str:
    """A variant as the configure step and the review both name it: its display name (the pill
    label, e.g. ``BF16``) and its catalog key (``default``, what ``plan`` prints and a selection
    file holds) — ``"BF16 (default)"``; the display name alone when it only differs in case
    (``FP8`` for ``fp8``), the key alone without a display name."""
    if not label:
        return key
    return label if label.lower() == key.lower() else f"{label} ({key})"


def warnings_of(opts: Any) -> list[str]:
    """The banners of ``opts`` (N5 insufficient VRAM, TP hints, …) as plain strings."""
    return [w if isinstance(w, str) else str(_get(w, "text") or w) for w in (_get(opts, "warnings") or [])]


def apply_choice(selection: Mapping[str, Any], view: AxisView, choice_id: str, opts: Any = None) -> dict[str, Any]:
    """A new selection with ``choice_id`` picked on row ``view`` (see the module rules).

    ``opts`` (the Options the row came from) is needed for KV group/Mooncake pills, to pick their
    first available member. Never raises: ids come from the constraints answer.
    """
    new = dict(selection)
    axis, _, sub = view.key.partition(":")
    choice = next((c for c in view.choices if c.id == choice_id), None)
    kind = AXES.get(axis, ("", f"set:{axis}"))[1]
    if axis == "pd_modes":
        pd = {role: dict(pool or {}) for role, pool in (new.get("pd") or {}).items()}
        pd.setdefault(sub, {})["mode"] = choice_id
        new["pd"] = pd
    elif axis == "feature_modes":
        new["feature_modes"] = {**(new.get("feature_modes") or {}), sub: choice_id}
    elif axis == "features":
        current = [c.id for c in view.choices if c.selected]
        new["features"] = [f for f in current if f != choice_id] if choice_id in current else current + [choice_id]
    elif axis == "advanced":
        args = list(new.get("advanced_args") or [])
        run = choice.args if choice else ()
        at = _contains_run(args, run)
        # a preset goes in front: what the person typed comes later and wins (docs/catalog.md §3)
        new["advanced_args"] = args[:at] + args[at + len(run):] if at >= 0 else list(run) + args
    elif axis == "frontend":
        new["frontend"] = None if new.get("frontend") == choice_id else choice_id
    elif axis == "kv_offload":
        members = _get(opts, "kv_offload_members") or {} if opts is not None else {}
        if choice_id in members:
            first = next((m for m in members[choice_id] if _get(m, "state") == "available"), None)
            new["kv_offload"] = str(_get(first, "id")) if first is not None else None
        elif choice_id == "mooncake" and opts is not None:
            first = next((t for t in _get(opts, "mooncake_topology") or [] if _get(t, "state") == "available"), None)
            new["kv_offload"] = str(_get(first, "id")) if first is not None else None
        else:
            new["kv_offload"] = choice_id
    elif kind.startswith("int:"):
        key = kind[4:]
        new[key] = int(choice_id) if choice_id.isdigit() else choice_id
    else:
        key = kind[4:] if kind.startswith("set:") else axis
        new[key] = choice_id
    for dep in RESET_AFTER.get(axis, ()):
        new.pop(dep, None)
    return {k: v for k, v in new.items() if v is not None}



