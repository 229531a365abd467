""""Did you mean …" for every unknown name the wizard reports: one cutoff, one wording.

Candidates containing the typed word come first, then :func:`difflib.get_close_matches` with
:data:`CUTOFF` ranks the rest (case ignored); the hint reads
``(did you mean 'a'?)`` or ``(did you mean 'a' or 'b'?)`` and is appended to a message that
already names the unknown value and, where short, the valid ones.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: Similarity ratio (0–1) a candidate needs to be suggested (difflib's ratio).
CUTOFF = 0.6
#: A typed word this long or longer also suggests every candidate that contains it.
MIN_PART = 4


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` candidates closest to ``word``, as spelled, ignoring case: first those that
    contain a word of :data:`MIN_PART` or more characters (``mooncake`` → both Mooncake KV-store
    ids), then difflib's ranking above :data:`CUTOFF`; [] when nothing is close."""
    by_lower: dict[str, str] = {}
    for c in candidates:
        by_lower.setdefault(str(c).lower(), str(c))
    w = str(word).lower()
    found = [c for c in by_lower if len(w) >= MIN_PART and w in c and c != w]
    found += [c for c in difflib.get_close_matches(w, list(by_lower), n=n, cutoff=CUTOFF) if c not in found]
    return [by_lower[f] for f in found[:n]]


def did_you_mean(word: str, candidates: Iterable[str], n: int = 1) -> str:
    """``" (did you mean 'x'?)"`` (``'x' or 'y'`` for n > 1) for the closest candidates, else ``""``."""
    close = close_matches(word, candidates, n=n)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"


def casefold_key(value: str | None, choices: Iterable[str]) -> str | None:
    """``value`` itself when it is a key of ``choices``, else the one key equal to it ignoring case
    (``H200`` → ``h200``, ``FP8`` → ``fp8``); ``value`` unchanged when no or several keys match
    (the caller's "unknown …" error then names the candidates)."""
    choices = list(choices)
    if value is None or value in choices:
        return value
    hits = [c for c in choices if c.lower() == value.lower()]
    return hits[0] if len(hits) == 1 else value
