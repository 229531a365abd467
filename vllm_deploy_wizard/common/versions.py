"""vLLM version strings: parse, order, compare — ``packaging.version`` plus the recipes' ``"nightly"``.

Recipes write ``min_vllm_version`` as a release (``"0.11.0"``) or as ``"nightly"`` (needs a build
newer than any release). Installed versions carry local labels (``0.32.0+cpu``, ``0.11.1.dev12+g3ab``).
``nightly`` sorts above every release. Text that is not a PEP 440 version is read from its first
``X.Y[.Z]``; text without one is unknown (``None``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from packaging.version import InvalidVersion, Version

#: The recipes' word for "a nightly build is needed".
NIGHTLY = "nightly"

_NUMBERS = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def parse(text: str | None) -> Version | None:
    """``text`` as a :class:`~packaging.version.Version` (``"vLLM 0.32.0+cpu"`` → ``0.32.0+cpu``);
    None for ``nightly``, an empty string or text holding no version."""
    text = (text or "").strip()
    if not text or text.lower() == NIGHTLY:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        m = _NUMBERS.search(text)
        return Version(".".join(g for g in m.groups() if g is not None)) if m else None


def sort_key(text: str) -> tuple[int, Version]:
    """Order of version strings: unknown text lowest, releases by PEP 440, ``nightly`` highest."""
    if text.strip().lower() == NIGHTLY:
        return (2, Version("0"))
    v = parse(text)
    return (1, v) if v is not None else (0, Version("0"))


def highest(versions: Iterable[str]) -> str | None:
    """The highest of ``versions`` as written (``["0.11.0", "nightly"]`` → ``"nightly"``); None if empty."""
    items = [v for v in versions if v]
    return max(items, key=sort_key) if items else None


def at_least(installed: str, minimum: str) -> bool | None:
    """Whether ``installed`` meets ``minimum``, comparing releases without local labels
    (``0.32.0+cpu`` meets ``0.32.0``). ``nightly`` is met by a dev or pre-release build and cannot
    be decided for a release (None); None as well when either side holds no version."""
    have = parse(installed)
    if have is None:
        return None
    if minimum.strip().lower() == NIGHTLY:
        return True if (have.is_devrelease or have.is_prerelease) else None
    need = parse(minimum)
    if need is None:
        return None
    return Version(have.public) >= Version(need.public)
