"""The pydantic validators of the run-time records (:mod:`.record`), derived from their definitions.

:func:`pydantic_model` builds, once per record class, a pydantic model with the same name, fields,
annotations, defaults, constraints and ``model_config``; catalog records (``CatalogModel``) also drop
``null`` values before validation (docs/synthesis.md §0). A record nested in an annotation validates
with its own derived model and comes out as the record (:func:`nested_schema`), so
:func:`validate` returns records all the way down. Errors are pydantic's ``ValidationError`` with the
model names and field paths the hand-written pydantic models had.

This is the only module of the catalog that imports pydantic; a start that takes the catalog from
its cache and a selection from exactly-typed flags never imports it (tests/catalog/test_records.py).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, create_model, model_validator
from pydantic import Field as PydanticField
from pydantic_core import core_schema

from .record import Record, type_hints

_MODELS: dict[type, type[BaseModel]] = {}


class _DropNulls(BaseModel):
    """Base of the catalog records' validators: ``null`` is "absent" (docs/synthesis.md §0)."""

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        if isinstance(data, dict) and None in data.values():
            return {k: v for k, v in data.items() if v is not None}
        return data


def pydantic_model(cls: type[Record]) -> type[BaseModel]:
    """The pydantic model that validates records of ``cls`` (built on first use, then cached).

    Raises ``TypeError`` for a class that is not a :class:`~.record.Record`."""
    model = _MODELS.get(cls)
    if model is not None:
        return model
    if not (isinstance(cls, type) and issubclass(cls, Record)):
        raise TypeError(f"{cls!r} is not a record class")
    fields: dict[str, Any] = {}
    for name, hint in type_hints(cls).items():
        spec = cls.model_fields[name]
        if spec.default_factory is not None:
            info = PydanticField(default_factory=spec.default_factory, **spec.constraints)
        elif spec.required:
            info = PydanticField(**spec.constraints)
        else:
            info = PydanticField(default=spec.default, **spec.constraints)
        fields[name] = (hint, info)
    parent: type[BaseModel] = _DropNulls if getattr(cls, "drop_nulls", False) else BaseModel
    config = ConfigDict(**cls.model_config)  # type: ignore[typeddict-item]
    base: type[BaseModel] = type(f"{cls.__name__}Base", (parent,), {"model_config": config})
    model = create_model(cls.__name__, __base__=base, __module__=cls.__module__, __doc__=cls.__doc__, **fields)
    _MODELS[cls] = model
    return model


def _to_record(cls: type[Record], value: BaseModel) -> Any:
    obj = object.__new__(cls)
    obj.__dict__.update(value.__dict__)
    if value.__pydantic_extra__:
        obj.__dict__.update(value.__pydantic_extra__)
    return obj


def nested_schema(cls: type[Record], handler: Any) -> Any:
    """The core schema of a record nested in an annotation: its derived model, then the record."""
    return core_schema.no_info_after_validator_function(
        lambda value: _to_record(cls, value), handler.generate_schema(pydantic_model(cls)))


def validate(cls: type[Record], data: Any) -> Any:
    """``data`` validated as ``cls`` (nested records included); raises pydantic's ``ValidationError``."""
    return _to_record(cls, pydantic_model(cls).model_validate(data))
