"""Run-time records: the catalog's, the selection's and the plan's classes, pydantic-free.

Why: defining ~60 pydantic classes (and building their validators) cost a ``vllm-wizard plan``
more than the planning itself. The classes are now plain Python (:class:`Record`); each is
written once, with annotations, defaults and ``Field(...)`` constraints in pydantic's own
spelling, and :mod:`.validation` derives the pydantic model that validates it from that same
definition. Validating (``Cls.model_validate(data)``) builds and runs the pydantic model and hands
back the record; constructing a record (``Cls(**kwargs)``) does not validate, as pydantic's
``model_construct`` — the planner builds them from values it already checked.

What a record offers callers is the subset of pydantic's model API they use: ``model_fields``
(field name → :class:`FieldSpec`), ``model_extra``, ``model_copy(update=, deep=)``,
``model_dump(exclude_none=, exclude_defaults=)``, ``model_validate``, equality by type and
values, and pickling (the bundled-catalog cache, :mod:`.bundled_cache`).

Pieces: :class:`Record`, :func:`Field` (a field's default, default factory and pydantic
constraints such as ``ge``/``le``), :class:`Before` (a before-validator in ``Annotated`` metadata,
pydantic's ``BeforeValidator``) and :func:`fast_validate` (accepts exactly-typed, in-range data
without pydantic; None where pydantic has to decide).
"""

from __future__ import annotations

import copy
import types
import typing
from collections.abc import Callable
from typing import Any, ClassVar

_MISSING: Any = object()


class FieldSpec:
    """One field of a record: ``default`` (``_MISSING`` = required), ``default_factory`` and the
    pydantic ``Field`` keyword arguments (``constraints``: ``ge``, ``le``, …)."""

    __slots__ = ("default", "default_factory", "constraints")

    def __init__(self, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None,
                 **constraints: Any):
        self.default = default
        self.default_factory = default_factory
        self.constraints = constraints

    @property
    def required(self) -> bool:
        """True when the field has neither a default nor a default factory."""
        return self.default is _MISSING and self.default_factory is None

    def value(self) -> Any:
        """A fresh default value (the factory's result, else the default itself)."""
        return self.default_factory() if self.default_factory is not None else self.default


def Field(default: Any = _MISSING, *, default_factory: Callable[[], Any] | None = None,  # noqa: N802 — pydantic's name
          **constraints: Any) -> Any:
    """A field's default and constraints, spelled as pydantic's ``Field`` (``ge``, ``le``…): the
    validator receives them unchanged (:mod:`.validation`); the record only uses the default."""
    return FieldSpec(default, default_factory, **constraints)


class Before:
    """``Annotated`` metadata: run ``func`` on the raw value before validation (pydantic's
    ``BeforeValidator``, imported only when a validator is built)."""

    __slots__ = ("func",)

    def __init__(self, func: Callable[[Any], Any]):
        self.func = func

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic import BeforeValidator

        return BeforeValidator(self.func).__get_pydantic_core_schema__(source, handler)


class Record:
    """Base of the run-time classes: fields are the annotated class attributes (a plain default or
    :func:`Field`); keyword arguments that are not fields are kept as extras (``model_extra``).

    ``model_config`` (a dict, pydantic's ``ConfigDict`` keys) is read by the validator only.
    """

    model_fields: ClassVar[dict[str, FieldSpec]] = {}
    model_config: ClassVar[dict[str, Any]] = {}
    #: True: constructing validates the keyword arguments (:meth:`model_validate`), as a pydantic
    #: model's constructor does — the selection's and the plan's records, whose values come from
    #: people and from the planner; False: taken as given (catalog records, validated at load).
    validate_init: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = dict(cls.model_fields)
        for name, hint in cls.__dict__.get("__annotations__", {}).items():
            if isinstance(hint, str) and hint.startswith("ClassVar"):
                continue
            value = cls.__dict__.get(name, _MISSING)
            spec = value if isinstance(value, FieldSpec) else FieldSpec(value)
            if isinstance(value, FieldSpec):
                delattr(cls, name)  # the instance's value, never the spec, is what an attribute reads
            fields[name] = spec
        cls.model_fields = fields

    def __init__(self, **data: Any):
        if self.validate_init:
            self.__dict__.update(type(self).model_validate(data).__dict__)
            return
        values = {}
        for name, spec in self.model_fields.items():
            if name in data:
                values[name] = data.pop(name)
            elif spec.required:
                raise TypeError(f"{type(self).__name__}: `{name}` is required")
            else:
                values[name] = spec.value()
        values.update(data)
        self.__dict__.update(values)

    @classmethod
    def model_validate(cls, data: Any) -> Any:
        """Validate ``data`` as this class and return the record: :func:`fast_validate` when the
        data is exactly typed, else the pydantic model derived from the class (:mod:`.validation`);
        raises pydantic's ``ValidationError`` (as a pydantic model would)."""
        fast = fast_validate(cls, data)
        if fast is not None:
            return fast
        from .validation import validate

        return validate(cls, data)

    @property
    def model_extra(self) -> dict[str, Any]:
        """The values given for keys that are not fields (catalog records allow unknown keys)."""
        return {k: v for k, v in self.__dict__.items() if k not in self.model_fields}

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        """A copy with ``update`` applied, not validated (as pydantic's ``model_copy``)."""
        new = object.__new__(type(self))
        new.__dict__.update(copy.deepcopy(self.__dict__) if deep else self.__dict__)
        if update:
            new.__dict__.update(update)
        return new

    def model_dump(self, *, exclude_none: bool = False, exclude_defaults: bool = False) -> dict[str, Any]:
        """The values as plain dicts and lists (nested records too), fields then extras."""
        out = {}
        for name, value in self.__dict__.items():
            if exclude_none and value is None:
                continue
            spec = self.model_fields.get(name)
            if exclude_defaults and spec is not None and not spec.required and value == spec.value():
                continue
            out[name] = _dump(value, exclude_none, exclude_defaults)
        return out

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    # mutable, so unhashable, as pydantic models
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """A record nested in another's annotation validates with its own derived model and
        becomes a record (:mod:`.validation`)."""
        from .validation import nested_schema

        return nested_schema(cls, handler)


def _dump(value: Any, exclude_none: bool, exclude_defaults: bool) -> Any:
    if isinstance(value, Record):
        return value.model_dump(exclude_none=exclude_none, exclude_defaults=exclude_defaults)
    if isinstance(value, dict):
        return {k: _dump(v, exclude_none, exclude_defaults) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_dump(v, exclude_none, exclude_defaults) for v in value]
    return value


def type_hints(cls: type[Record]) -> dict[str, Any]:
    """The evaluated annotations of ``cls``'s fields (``Annotated`` metadata kept), cached on the class."""
    hints = cls.__dict__.get("_hints")
    if hints is None:
        hints = typing.get_type_hints(cls, include_extras=True)
        hints = {name: hints[name] for name in cls.model_fields}
        cls._hints = hints  # type: ignore[attr-defined]
    return hints


# ---------------------------------------------------------------------------------------------
# the fast path: exactly-typed data accepted without pydantic


class _Reject(Exception):
    pass


_SCALARS = (str, int, float, bool)


def fast_validate(cls: type[Record], data: Any) -> Any:
    """``cls`` built from ``data`` when every value already has its field's exact type and lies in
    its ``ge``/``le`` range (what pydantic would accept unchanged), else None: the caller then
    validates with pydantic, which converts or reports. Supports the annotations of the
    selection's records: scalars, ``None``, ``Literal``, unions, ``list``/``dict`` of those and
    nested records; a before-validator in ``Annotated`` runs first, as in pydantic. Records that
    allow extra keys, or annotations outside that set, always take the pydantic path."""
    try:
        return _record(cls, data)
    except _Reject:
        return None


def _record(cls: type[Record], data: Any) -> Any:
    if not isinstance(data, dict) or cls.model_config.get("extra") != "forbid":
        raise _Reject
    hints = type_hints(cls)
    fields = cls.model_fields
    values = {}
    for key, value in data.items():
        if not isinstance(key, str) or key not in fields:
            raise _Reject
        values[key] = _check(hints[key], value, fields[key].constraints)
    for name, spec in fields.items():
        if name not in values:
            if spec.required:
                raise _Reject
            values[name] = spec.value()
    obj = object.__new__(cls)
    obj.__dict__.update({name: values[name] for name in fields})
    return obj


def _check(hint: Any, value: Any, constraints: dict[str, Any]) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        for meta in hint.__metadata__:
            if not isinstance(meta, Before):
                raise _Reject
            value = meta.func(value)
        return _check(args[0], value, constraints)
    if hint is Any:
        return value
    if hint is None or hint is type(None):
        if value is None:
            return None
        raise _Reject
    if origin is typing.Union or origin is types.UnionType:
        if value is None:
            if type(None) in args:
                return None
            raise _Reject
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _check(arg, value, constraints)
            except _Reject:
                pass
        raise _Reject
    if origin is typing.Literal:
        if type(value) in _SCALARS and any(type(value) is type(a) and value == a for a in args):
            return value
        raise _Reject
    if origin is list:
        if type(value) is not list:
            raise _Reject
        return [_check(args[0], v, {}) for v in value]
    if origin is dict:
        if type(value) is not dict:
            raise _Reject
        return {_check(args[0], k, {}): _check(args[1], v, {}) for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, Record):
        if type(value) is hint:
            return value  # an instance is taken as it is (pydantic's revalidate_instances="never")
        return _record(hint, value)
    if hint in _SCALARS and type(value) is hint:
        if hint is float and value != value:  # NaN: pydantic decides
            raise _Reject
        if (ge := constraints.get("ge")) is not None and not value >= ge:
            raise _Reject
        if (le := constraints.get("le")) is not None and not value <= le:
            raise _Reject
        if set(constraints) - {"ge", "le"}:
            raise _Reject
        return value
    raise _Reject
