"""Plan placeholders (plan-json §3.2): ``$NAME`` / ``${NAME}`` in argv, env, health URLs and ports,
filled at launch from ``values``.

Decisions:

* Only upper-case names (``$[A-Z][A-Z0-9_]*``) are placeholders — the form plan-json uses — so a
  literal ``$`` in e.g. a JSON ``--speculative-config`` stays intact.
* ``$$NAME`` (and ``$${NAME}``) is the escape for a literal ``$NAME`` — a shell variable meant for a
  ``bash -c`` argv or a setup script — and is never a placeholder. Only a ``$$`` in front of a
  placeholder-shaped name is an escape; any other ``$$`` (bash's own PID) stays as is.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

#: A placeholder: ``$NAME`` or ``${NAME}`` with an upper-case name (plan-json §3.2) — or the escape
#: ``$$`` in front of such a name (``$$NAME``, ``$${NAME}``), matched first so it is never one: the
#: groups are empty for an escape, which :func:`fill` turns into a single ``$``.
PLACEHOLDER_RE = re.compile(r"\$\$(?=\{[A-Z][A-Z0-9_]*\}|[A-Z])|\$\{([A-Z][A-Z0-9_]*)\}|\$([A-Z][A-Z0-9_]*)")


def placeholders_in(text: str) -> list[str]:
    """Names of the ``$PLACEHOLDERS`` in ``text`` in order of appearance (duplicates kept); an
    escaped ``$$NAME`` is none (``placeholders_in("$$HOME $PORT") == ["PORT"]``)."""
    return [m.group(1) or m.group(2) for m in PLACEHOLDER_RE.finditer(text) if m.group(1) or m.group(2)]


def fill(text: str, values: Mapping[str, str], only: Iterable[str] | None = None) -> str:
    """Replace each placeholder of ``values`` in ``text``; unknown ones stay literal; the escape
    ``$$NAME`` (``$${NAME}``) becomes the literal ``$NAME`` (``${NAME}``), never filled. One pass:
    a value that itself contains ``$X`` is inserted as is, never filled again.

    ``only`` restricts filling to those names (used for bash ``setup`` preludes).
    ``fill("$$HOME:$P", {"P": "1", "HOME": "x"}) == "$HOME:1"``.
    """
    allowed = set(only) if only is not None else None

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if not name:
            return "$"  # the escape $$NAME → $NAME
        if name in values and (allowed is None or name in allowed):
            return str(values[name])
        return m.group(0)

    return PLACEHOLDER_RE.sub(sub, text)
