"""The placeholder grammar of plans, in one table used by the catalog (writing plans) and the
launcher (filling and refusing them). See docs/plan-file.md §6.1.

A plan is a template: argv elements, env values and health URLs hold ``$NAME`` placeholders
(``$HEAD_IP``, ``$PREFILL_NODE_2``…) filled at launch. The grammar:

============  ==========================  =============================================
written       meaning                     example
============  ==========================  =============================================
``$NAME``     placeholder NAME            ``$HEAD_IP`` → filled with the head's address
``${NAME}``   placeholder NAME            ``${ROUTER_PORT}``
``$$NAME``    the literal text ``$NAME``  ``$$HOME`` → ``$HOME`` for the shell, never filled
``$${NAME}``  the literal ``${NAME}``     ``$${HOME}``
============  ==========================  =============================================

NAME is :data:`NAME` — an upper-case letter, then upper-case letters, digits and ``_`` — so a lone
``$``, ``$foo``, ``${Home}`` and bash's ``$_`` / ``$1`` are plain text. A bare ``$NAME`` ends at
the first character outside the name. Any ``$$`` not followed by a name (bash's own pid) stays as
written. Filling replaces whole names only, in one pass (a value holding ``$X`` is not filled
again); unfilled names stay literal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

#: A placeholder name.
NAME = r"[A-Z][A-Z0-9_]*"

#: The grammar: ``(form, regex, kind)`` — ``kind`` is ``"escape"`` or ``"placeholder"``; forms are
#: tried in this order at each ``$`` (escapes first, so ``$$NAME`` is never a placeholder).
GRAMMAR: tuple[tuple[str, str, str], ...] = (
    ("$${NAME}", r"\$\$\{(?P<e1>" + NAME + r")\}", "escape"),
    ("$$NAME", r"\$\$(?P<e2>" + NAME + r")", "escape"),
    ("${NAME}", r"\$\{(?P<p1>" + NAME + r")\}", "placeholder"),
    ("$NAME", r"\$(?P<p2>" + NAME + r")", "placeholder"),
)

TOKEN_RE = re.compile("|".join(f"(?:{rx})" for _, rx, _ in GRAMMAR))


@dataclass(frozen=True)
class Token:
    """One match of the grammar in a text: ``start``/``end`` offsets, the ``name``, whether it is an
    ``escape`` (a literal ``$NAME``), and ``braced`` (written with ``{}``)."""

    start: int
    end: int
    name: str
    escape: bool
    braced: bool

    @property
    def literal(self) -> str:
        """What an escape stands for (``$$HOME`` → ``$HOME``); for a placeholder its own text."""
        return ("${%s}" if self.braced else "$%s") % self.name


def tokens(text: str) -> Iterator[Token]:
    """Every placeholder and escape in ``text``, in order."""
    for m in TOKEN_RE.finditer(text):
        g = m.groupdict()
        name = g["e1"] or g["e2"] or g["p1"] or g["p2"]
        yield Token(m.start(), m.end(), name, escape=bool(g["e1"] or g["e2"]), braced=bool(g["e1"] or g["p1"]))


def names(text: str) -> list[str]:
    """Placeholder names in ``text`` in order of appearance, duplicates kept; escapes are none.
    ``names("$$HOME ${PORT}:$HEAD_IP") == ["PORT", "HEAD_IP"]``."""
    return [t.name for t in tokens(text) if not t.escape]


def names_in(texts: Iterable[str]) -> list[str]:
    """Sorted unique placeholder names over many texts."""
    return sorted({n for text in texts for n in names(text)})


def is_placeholder(text: str) -> bool:
    """True when ``text`` is exactly one placeholder (``$NAME`` or ``${NAME}``)."""
    found = list(tokens(text))
    return len(found) == 1 and not found[0].escape and found[0].start == 0 and found[0].end == len(text)


def fill(text: str, values: Mapping[str, str], only: Iterable[str] | None = None, *,
         keep_escapes: bool = False) -> str:
    """Replace each placeholder named in ``values`` (restricted to ``only`` when given); others stay
    literal; escapes become their literal text, or stay as written with ``keep_escapes`` (for a text
    that is filled now and rendered later, e.g. an argv token before it becomes a shell word).
    ``fill("$$HOME:$P", {"P": "1"}) == "$HOME:1"``; with ``keep_escapes`` it is ``"$$HOME:1"``."""
    allowed = set(only) if only is not None else None
    out: list[str] = []
    pos = 0
    for t in tokens(text):
        out.append(text[pos:t.start])
        if t.escape:
            out.append(text[t.start:t.end] if keep_escapes else t.literal)
        elif t.name in values and (allowed is None or t.name in allowed):
            out.append(str(values[t.name]))
        else:
            out.append(text[t.start:t.end])
        pos = t.end
    out.append(text[pos:])
    return "".join(out)

