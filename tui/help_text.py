"""F1 help: the keys of the screen in front, read from its own bindings (no hand-kept list to drift).

Decision: the text is built from the screen class' ``BINDINGS`` (shown *and* hidden ones, e.g. the
review's letter shortcuts and the monitor's ``q``) plus the app's, grouped by action so
``ctrl+l / l  Launch`` is one line, and preceded by the screen's ``HELP_INTRO`` (a class attribute
with what is not a key: what enter does, what a column means). Screens owned by other modules (the
monitor) get their keys listed without any change there.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from textual.binding import Binding


def _bindings(classes: Iterable[type]) -> list[Binding]:
    out: list[Binding] = []
    for cls in classes:
        for b in getattr(cls, "BINDINGS", []) or []:
            if isinstance(b, Binding):
                out.append(b)
            elif isinstance(b, tuple) and len(b) >= 2:  # ("key", "action", "description")
                out.append(Binding(*b))
    return out


def help_lines(screen: Any, app: Any) -> list[str]:
    """``["ctrl+l / l  Launch", …]`` for ``screen`` (its class MRO's BINDINGS, then the app's), one
    line per action in first-seen order; bindings without a description are left out."""
    seen: dict[str, tuple[list[str], str]] = {}
    mro = [c for c in type(screen).__mro__ if c.__module__.startswith("vllm_deploy_wizard")]
    for b in _bindings(mro) + _bindings([type(app)]):
        if not b.description:
            continue
        keys, _ = seen.setdefault(b.action, ([], b.description))
        for key in b.key.split(","):
            key = key.strip().replace("slash", "/")
            if key not in keys:
                keys.append(key)
    return [f"{' / '.join(keys):<16} {desc}" for keys, desc in seen.values()]


def help_text(screen: Any, app: Any) -> str:
    """The whole F1 text for ``screen``: its ``HELP_INTRO`` (if any), then :func:`help_lines`, then the
    command palette hint and what escape does in a popup."""
    intro = str(getattr(screen, "HELP_INTRO", "") or "").strip()
    lines = ([intro, ""] if intro else []) + help_lines(screen, app)
    lines.append("ctrl+p           command palette (every step and action)")
    lines.append("escape           in a popup (this help, a y/n question): closes it")
    return "\n".join(lines)
