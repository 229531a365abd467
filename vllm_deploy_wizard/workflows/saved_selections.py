"""Saved and recent selections: what ``plan --save NAME`` keeps and ``wizard --open`` reopens (docs/benchmark.md §2).

A saved selection is ``<XDG config>/vllm-wizard/selections/<NAME>.yaml``: ``name``, ``saved`` (epoch
seconds), ``selection`` (the docs/plan-file.md §2 mapping the plan was made from) and, from the
wizard, ``port_edits`` (the review's ``{"process|flag": port}``). The wizard also records the last
:data:`RECENT_MAX` distinct selections it reviewed in ``selections/.recent.yaml``, newest first.

:func:`open_selection` takes a saved name, a selection file (§2: a mapping with ``model``) or a plan
file (``plan --out``: its ``provenance.selection``); errors name what was tried and the saved names.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common import appdirs
from vllm_deploy_wizard.common.errors import SelectionError

#: A selection name: letters, digits, ``.``, ``_``, ``-`` (it becomes a file name), 1–64 characters.
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: Recent selections kept.
RECENT_MAX = 8


@dataclass
class SavedSelection:
    """``name`` (None for a recent or a file), ``selection`` (§2 mapping), ``port_edits``, ``saved``
    (epoch seconds, 0 when unknown), ``source`` (the file it came from)."""

    name: str | None
    selection: dict[str, Any]
    port_edits: dict[str, int] = field(default_factory=dict)
    saved: float = 0.0
    source: Path | None = None

    @property
    def label(self) -> str:
        """One line for a list: ``name · model on hardware · date``."""
        sel = self.selection
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.saved)) if self.saved else ""
        what = f"{sel.get('model', '?')} on {sel.get('hardware', '?')}"
        extra = [f"{k}={sel[k]}" for k in ("variant", "strategy", "kv_offload") if sel.get(k)]
        parts = [p for p in (self.name, what + (f" ({', '.join(extra)})" if extra else ""), when) if p]
        return " · ".join(parts)


def selections_dir() -> Path:
    """``<XDG config>/vllm-wizard/selections`` (not created)."""
    return appdirs.config_dir() / "selections"


def check_name(name: str, flag: str = "--save") -> str:
    """``name`` when it is a valid selection name; raises :class:`SelectionError` naming ``flag`` and what is valid."""
    if not NAME_RE.fullmatch(name or ""):
        raise SelectionError(f"{flag} {name!r}: a selection name is 1–64 letters, digits, '.', '_' or '-', "
                             "starting with a letter or digit (e.g. qwen-h200)")
    return name


def _write(path: Path, data: dict[str, Any]) -> None:
    import yaml

    from vllm_deploy_wizard.common import files

    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def save(name: str, selection: dict[str, Any], port_edits: dict[str, int] | None = None) -> Path:
    """Save ``selection`` as ``name`` (replacing one of that name); returns the file. Raises
    :class:`SelectionError` for a bad name or a folder that cannot be written."""
    check_name(name)
    path = selections_dir() / f"{name}.yaml"
    data = {"name": name, "saved": time.time(), "selection": dict(selection),
            "port_edits": {k: int(v) for k, v in (port_edits or {}).items()}}
    try:
        _write(path, data)
    except OSError as exc:
        raise SelectionError(f"--save {name}: cannot write {path}: {exc.strerror or exc}") from None
    return path


def _read(path: Path) -> dict[str, Any]:
    from vllm_deploy_wizard.common import yamlio

    try:
        data = yamlio.load_file(path)
    except OSError as exc:
        raise SelectionError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except Exception as exc:  # noqa: BLE001 — yaml.YAMLError
        import yaml

        if isinstance(exc, yaml.YAMLError) and hasattr(exc, "problem_mark"):
            raise SelectionError(yamlio.error_message(path, exc)) from None
        raise SelectionError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise SelectionError(f"{path}: expected a mapping, got {type(data).__name__}")
    return data


def _entry(path: Path, data: dict[str, Any]) -> SavedSelection:
    sel = data.get("selection")
    if not isinstance(sel, dict) or "model" not in sel:
        raise SelectionError(f"{path}: `selection` must be a mapping with `model`")
    edits = data.get("port_edits") or {}
    return SavedSelection(data.get("name"), dict(sel), {str(k): int(v) for k, v in edits.items()},
                          float(data.get("saved") or 0), path)


def saved() -> list[SavedSelection]:
    """Every readable saved selection, newest first (unreadable files are skipped)."""
    out = []
    folder = selections_dir()
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        try:
            out.append(_entry(path, _read(path)))
        except SelectionError:
            continue
    out.sort(key=lambda s: s.saved, reverse=True)
    return out


def recent() -> list[SavedSelection]:
    """The recent selections the wizard reviewed, newest first."""
    path = selections_dir() / ".recent.yaml"
    if not path.exists():
        return []
    try:
        items = _read(path).get("recent") or []
    except SelectionError:
        return []
    out = []
    for item in items:
        try:
            out.append(_entry(path, item))
        except (SelectionError, AttributeError, TypeError, ValueError):
            continue
    return out


def record_recent(selection: dict[str, Any], port_edits: dict[str, int] | None = None) -> None:
    """Put ``selection`` first in the recent list (an equal one moves up); never raises (best effort)."""
    entry = {"name": None, "saved": time.time(), "selection": dict(selection),
             "port_edits": {k: int(v) for k, v in (port_edits or {}).items()}}
    items = [{"name": None, "saved": r.saved, "selection": r.selection, "port_edits": r.port_edits}
             for r in recent() if (r.selection, r.port_edits) != (entry["selection"], entry["port_edits"])]
    try:
        _write(selections_dir() / ".recent.yaml", {"recent": [entry, *items][:RECENT_MAX]})
    except OSError:
        pass


def open_selection(ref: str) -> SavedSelection:
    """The selection ``ref`` names: a saved name, a selection file or a plan file (see the module
    docstring). Raises :class:`SelectionError` naming what was tried, the saved names and a
    did-you-mean."""
    path = Path(ref).expanduser()
    if path.is_file():
        data = _read(path)
        if isinstance(data.get("selection"), dict) and "plan" not in data:
            return _entry(path, data)  # a saved selection given by path
        prov = data.get("provenance")
        if isinstance(prov, dict) and isinstance(prov.get("selection"), dict):
            return SavedSelection(None, dict(prov["selection"]), source=path)
        if "model" in data:
            return SavedSelection(None, dict(data), source=path)
        raise SelectionError(f"--open {ref}: neither a plan file (with provenance.selection) nor a selection "
                             "file (with `model`)")
    if NAME_RE.fullmatch(ref):
        named = selections_dir() / f"{ref}.yaml"
        if named.is_file():
            return _entry(named, _read(named))
    from vllm_deploy_wizard.common.suggest import did_you_mean

    names = [s.name for s in saved() if s.name]
    listing = ", ".join(names) if names else "none yet (`vllm-wizard plan … --save NAME` saves one)"
    raise SelectionError(f"--open {ref}: no such file and no saved selection of that name"
                         f"{did_you_mean(ref, names)}; saved selections: {listing}")
