"""What every catalog model builds on: :class:`CatalogModel` (unknown keys allowed, ``null`` dropped
before validation), :func:`js_string` (JavaScript's ``String()`` of a scalar) and the annotated field
types :data:`EnvValue`, :data:`Env`, :data:`Args` and :data:`DateStr` (docs/synthesis.md §0).
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Annotated, Any

from ..record import Before, Record


def js_string(value: Any) -> str:
    """Stringify a scalar as JavaScript's ``String()`` would (``0`` → ``"0"``, ``True`` → ``"true"``).

    Used for env values (docs/synthesis.md §0: ``PYTHONHASHSEED: 0`` is an int in YAML but a string when exported).
    Floats that are whole numbers print without ``.0``; dicts/lists become compact JSON.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _date_string(value: Any) -> Any:
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.strftime("%Y-%m-%d")
    return value


def _string_list(value: Any) -> Any:
    """Tokens of an args list; YAML may type a bare ``8`` as int — keep it a string."""
    if isinstance(value, list):
        return [v if isinstance(v, str) else js_string(v) for v in value]
    return value


#: An env value: any YAML scalar, stored as its JavaScript string form (docs/synthesis.md §0).
EnvValue = Annotated[str, Before(js_string)]
#: An environment mapping, insertion order preserved (it fixes docker ``-e`` order, §2.7).
Env = dict[str, EnvValue]
#: A list of command-line tokens (strings).
Args = Annotated[list[str], Before(_string_list)]
#: A ``YYYY-MM-DD`` date (YAML dates normalised, §0).
DateStr = Annotated[str, Before(_date_string)]


class CatalogModel(Record):
    """Base of every catalog record: unknown keys allowed, ``null`` treated as absent (docs/synthesis.md §0).

    A plain class (:class:`~..record.Record`): a start that takes the bundled catalog from its cache
    (:mod:`..bundled_cache`) defines and validates nothing with pydantic (issue #21);
    ``Cls.model_validate(data)`` validates with the pydantic model derived from the class
    (:mod:`..validation`). Constructing one drops ``None`` keyword values, as validation does.
    """

    model_config = {"extra": "allow", "populate_by_name": True}
    drop_nulls = True

    def __init__(self, **data: Any):
        super().__init__(**{k: v for k, v in data.items() if v is not None})
