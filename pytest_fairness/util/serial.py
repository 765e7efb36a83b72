"""The package's frozen dataclasses to and from their JSON form, generically, by their fields and type hints.

Records travel as JSON (from xdist workers, in the JSON report, between runs), and every writer and reader
used to list its fields by hand, so a new field was written where it is declared, where it is written and
where it is read. ``to_json`` writes a dataclass field by field, in declaration order: a field marked
``OMIT_EMPTY`` only when it holds something, one marked ``written_as(writer)`` in that writer's form, and a
derived property the class names in ``JSON_DERIVED`` right after the field it follows; so a new field is
declared once. ``from_json`` reads any dataclass field by field from its annotation (or with the ``reader``
its ``written_as`` names): nested dataclasses,
enums, literals, optionals, tuples, lists and mappings; a missing key takes the field's default (a report
of an earlier version), an unknown key is ignored, and None in a plain ``float`` field is NaN (strict
JSON has no NaN: writers put None there). A leaf: it imports nothing of the package.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")
#: Field metadata: leave the field out of the JSON form while it is empty (e.g. a reason that was not given).
OMIT_EMPTY: Mapping[str, bool] = types.MappingProxyType({"omit_empty": True})


def written_as(
    writer: Callable[[Any], Any], reader: Callable[[Any], Any] | None = None, *, omit_empty: bool = False
) -> Mapping[str, Any]:
    """Field metadata: write the field's value in ``writer``'s form (e.g. a record's result in its report form)
    and, given ``reader``, read it back with that."""
    return types.MappingProxyType({"writer": writer, "reader": reader, "omit_empty": omit_empty})


def to_json(value: Any) -> Any:
    """A dataclass (and what it holds) as JSON-ready values: fields in order, enums by value, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    return value


def _fields(value: Any) -> dict[str, Any]:
    derived: Mapping[str, str] = getattr(value, "JSON_DERIVED", {})
    out: dict[str, Any] = {}
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        if item or not f.metadata.get("omit_empty"):
            writer = f.metadata.get("writer")
            out[f.name] = to_json(item) if writer is None else writer(item)
        out |= {name: to_json(getattr(value, name)) for name, after in derived.items() if after == f.name}
    return out


@cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def from_json(kind: type[T], raw: Mapping[str, Any]) -> T:
    """The dataclass ``kind`` read from its JSON mapping (see the module's rules); a value that cannot be read is
    a ValueError naming its field (``threshold: max: ...``)."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"expected a mapping, got {raw!r}")
    hints, values = _hints(kind), {}
    for f in dataclasses.fields(kind):  # type: ignore[arg-type]
        if f.init and f.name in raw:
            reader = f.metadata.get("reader")
            try:
                values[f.name] = _read(hints[f.name], raw[f.name]) if reader is None else reader(raw[f.name])
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{f.name}: {exc}") from None
    return kind(**values)


def _read(hint: Any, value: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        return _read(rest[0], value) if len(rest) == 1 else value
    if value is None:
        return math.nan if hint is float else None
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_read(args[0], v) for v in value)
        return tuple(_read(a, v) for a, v in zip(args, value, strict=True)) if args else tuple(value)
    if origin is list:
        return [_read(args[0], v) for v in value] if args else list(value)
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise TypeError(f"expected a mapping, got {value!r}")
        return {k: _read(args[1], v) for k, v in value.items()} if args else dict(value)
    if origin is typing.Literal or hint is Any or hint is object:
        return value
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return from_json(hint, value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if hint in (float, int, str, bool):
        return hint(value)
    return value
