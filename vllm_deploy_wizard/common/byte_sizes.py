"""Size strings of the companions' config files, read as the consumer reads them.

Mooncake sizes (``global_segment_size``, ``local_buffer_size``): ``500GB``, ``"4 mb"``, a byte count;
units are binary (GB = 1024³), as vLLM 0.32's ``_parse_size`` reads them
(``vllm/distributed/mooncake_store.py``; docs/fit.md §9).
"""

from __future__ import annotations

import re
from typing import Any

#: Mooncake size units (vLLM 0.32 ``_parse_size``): binary multiples.
MOONCAKE_UNITS = {"gb": 1024**3, "mb": 1024**2, "kb": 1024, "b": 1}
_SIZE_RE = re.compile(r"^\s*([\d.]+)\s*(gb|mb|kb|b)?\s*$")


def mooncake_size_bytes(value: Any) -> int | None:
    """Bytes of a Mooncake size (``500GB`` → 536870912000, ``"4 mb"``, ``1073741824``) as vLLM 0.32
    ``_parse_size`` reads it; None when it is not such a size (a ``$PLACEHOLDER``, a typo, a bool)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    m = _SIZE_RE.match(str(value).lower())
    if not m:
        return None
    try:
        return int(float(m.group(1)) * MOONCAKE_UNITS[m.group(2) or "b"])
    except ValueError:
        return None
