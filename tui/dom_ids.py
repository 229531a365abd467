"""Widget ids built from catalog/launcher names (axis keys, feature names, placeholder names).

Textual ids must be valid CSS identifiers — letters, digits, ``_`` and ``-``, not starting with a
digit — because ``query_one("#id")`` parses them as selectors; a feature called ``spec.decode`` or a
name starting with a digit would make the query fail with "Unable to parse … as a query". Names
come from recipe YAML we do not control, so every id made from one goes through :func:`dom_id`.
Safe characters are kept so ids stay readable in tests and snapshots (``axis-pd_modes--decode``,
``ph-HEAD_IP``); the ``axis:sub`` separator becomes ``--``; any other character becomes ``-xx-``
(its hex code). Catalog names never contain ``--`` runs, so distinct names give distinct ids.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def dom_id(prefix: str, name: str) -> str:
    """``prefix-name`` as a valid Textual id: ``dom_id("axis", "feature_modes:spec.decode")`` →
    ``"axis-feature_modes--spec-2e-decode"``. ``prefix`` must start with a letter; ``name`` may be
    any string (a leading digit is fine after the prefix)."""
    return f"{prefix}-" + _UNSAFE.sub(lambda m: f"-{ord(m.group()):x}-", name.replace(":", "--"))
