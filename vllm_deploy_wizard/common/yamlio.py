"""YAML loading for every file the wizard reads: libyaml when present, duplicate keys refused.

PyYAML's safe loader keeps the *last* value of a repeated mapping key without a word, so a recipe
or plan file with two ``env:`` blocks silently loses one. :class:`Loader` refuses them with the
line of the repeat and of the first occurrence. It derives from libyaml's ``CSafeLoader`` when
PyYAML was built with it (the C parser is several times faster; the data is the same as
``safe_load``'s) and from ``SafeLoader`` otherwise. Merge keys (``<<``) may override keys, as YAML
allows; only keys written twice in the same mapping are refused.

Errors are ``yaml.YAMLError`` subclasses carrying a ``problem_mark``, so :func:`error_message`
turns any of them into ``"file:line: invalid YAML: problem"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError

try:  # libyaml is much faster; fall back to the pure-Python loader where it is missing
    _Base: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Base = yaml.SafeLoader

#: True when :class:`Loader` parses with libyaml.
LIBYAML = _Base is not yaml.SafeLoader


class DuplicateKeyError(ConstructorError):
    """A mapping names the same key twice; ``problem_mark`` is the repeat, ``context_mark`` the first."""


class Loader(_Base):
    """Safe YAML loader (libyaml when available) that refuses duplicate mapping keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base class reports it
                break
            if first is not None:
                raise DuplicateKeyError(
                    f"first `{key}` at line {first.start_mark.line + 1}", first.start_mark,
                    f"duplicate key `{key}`", key_node.start_mark)
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def load(text: str | bytes) -> Any:
    """Parse one YAML document (JSON is YAML too). Raises ``yaml.YAMLError`` (incl.
    :class:`DuplicateKeyError`); use :func:`error_message` for the person-facing text."""
    return yaml.load(text, Loader=Loader)  # noqa: S506 - a safe loader


def load_file(path: str | Path) -> Any:
    """Parse the YAML file at ``path`` (UTF-8). Raises ``OSError``, ``UnicodeDecodeError`` or
    ``yaml.YAMLError`` like :func:`load`."""
    return load(Path(path).read_bytes())


def compose(text: str | bytes) -> yaml.Node | None:
    """The node tree of one document (for line numbers of fields); None for an empty document."""
    return yaml.compose(text, Loader=Loader)


def error_message(path: str | Path, exc: yaml.YAMLError) -> str:
    """``"file:line: invalid YAML: problem (context)"`` from a PyYAML error (1-based line)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    cmark = getattr(exc, "context_mark", None)
    if context and cmark is not None and mark is not None and cmark.line != mark.line \
            and not isinstance(exc, DuplicateKeyError):
        context = f"{context} started at line {cmark.line + 1}"
    return f"{where}: invalid YAML: {problem}" + (f" ({context})" if context else "")
