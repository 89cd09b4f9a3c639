"""Frozen records: the registry's runtime types are plain dataclasses.

The registry (GPUs, rules packs, the cost model) is read by every plan, so its objects are
stdlib frozen dataclasses: building them costs no pydantic schema.  pydantic is used only at the
boundary, to validate a freshly parsed file (:func:`validate`, imported on first use): a record
class's constraints are ``Annotated`` metadata from ``annotated_types`` (which pydantic honours),
its cross-field rules a ``__post_init__`` that raises ``ValueError`` (pydantic reports it as a
validation error), and ``extra="forbid"`` its ``__pydantic_config__``.

A validated registry is kept as plain data (:func:`encode`), so that a later process rebuilds the
records (:func:`decode`) without YAML or pydantic: dataclasses become ``{"__record__": "module.Class",
...fields}`` and only the classes a caller names can be rebuilt from a snapshot.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any, TypeVar

__all__ = ["STRICT", "Record", "decode", "describe_errors", "encode", "evolve", "set_fields", "validate"]

R = TypeVar("R")

#: pydantic's config for every record: unknown keys are errors (a ConfigDict is a plain dict)
STRICT: Any = {"extra": "forbid"}

_TAG = "__record__"


class Record:
    """Base of every record class (decorate it ``@dataclass(frozen=True, kw_only=True)``):
    pydantic validates it with unknown keys refused."""

    __pydantic_config__ = STRICT


@functools.cache
def _adapter(cls: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(cls)


def validate(cls: type[R], data: Any) -> R:
    """``data`` validated into a ``cls`` record (raises pydantic's ``ValidationError``)."""
    adapter: Any = _adapter(cls)  # type: ignore[arg-type]  # a class is hashable
    result: R = adapter.validate_python(data)
    return result


#: pydantic's words for a stdlib dataclass, put as it says them for a model (one vocabulary)
_MESSAGES = {"unexpected_keyword_argument": "Extra inputs are not permitted",
             "missing_keyword_argument": "Field required", "missing_argument": "Field required"}


def describe_errors(exc: Any) -> list[tuple[str, str]]:
    """A pydantic ``ValidationError`` as ``(dotted location, message)`` pairs.

    A record's ``__post_init__`` names the field it rejects as ``"field: why"``; such an error
    is reported at that field (pydantic would put it at the record)."""
    out = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ())]
        msg = _MESSAGES.get(err.get("type", ""), err.get("msg", "invalid"))
        if err.get("type") == "value_error":
            msg = msg.removeprefix("Value error, ")
            head, sep, rest = msg.partition(": ")
            if sep and head.isidentifier():
                loc, msg = [*loc, head], rest
        out.append((".".join(loc), msg))
    return out


def set_fields(record: Any) -> list[str]:
    """The fields of ``record`` that hold something other than their default: what a file set.
    (A field a file sets to exactly its default counts as not set: such a value is the rule's
    absence, so it needs no source.)"""
    out = []
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            out.append(f.name)
            continue
        if value != default:
            out.append(f.name)
    return out


def encode(value: Any) -> Any:
    """``value`` (records, tuples, lists, dicts, scalars) as plain data ``marshal`` can hold."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        out[_TAG] = f"{type(value).__module__}.{type(value).__qualname__}"
        return out
    if isinstance(value, tuple):
        return tuple(encode(v) for v in value)
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot encode {type(value).__name__}")


#: the scalar types a snapshot holds (``marshal`` gives exactly these types, never subclasses)
_SCALARS = frozenset({str, int, float, bool, type(None)})


def decode(data: Any, classes: Mapping[str, type]) -> Any:
    """The inverse of :func:`encode`; a record whose class is not in ``classes`` is an error
    (``KeyError``), as is a field the class lacks (``TypeError``).  Dispatches on the exact
    type (what ``marshal`` gives back) and leaves scalars where they are: the registry
    snapshot is some 8,000 values, decoded on every run."""
    scalars = _SCALARS

    def one(value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            if _TAG in value:
                cls = classes[value[_TAG]]
                return cls(**{k: v if type(v) in scalars else one(v) for k, v in value.items() if k != _TAG})
            return {k: v if type(v) in scalars else one(v) for k, v in value.items()}
        if kind is tuple:
            return tuple([v if type(v) in scalars else one(v) for v in value])
        if kind is list:
            return [v if type(v) in scalars else one(v) for v in value]
        if kind in scalars:
            return value
        return _decode_subclass(value, one)

    return one(data)


def _decode_subclass(value: Any, one: Any) -> Any:
    """A value of a subclass of the plain types (never from ``marshal``; a caller's own data)."""
    if isinstance(value, dict):
        return one(dict(value))
    if isinstance(value, tuple):
        return one(tuple(value))
    if isinstance(value, list):
        return one(list(value))
    if isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a snapshot holds {type(value).__name__}, not plain data")


@functools.cache
def _plain_fields(cls: type) -> frozenset[str]:
    """The fields of a dataclass :func:`evolve` may copy: one without ``__post_init__``, init-only
    variables or slots (so a copy of its ``__dict__`` is an instance ``__init__`` would build)."""
    if hasattr(cls, "__post_init__") or hasattr(cls, "__slots__"):
        raise TypeError(f"{cls.__name__} runs code at construction: use dataclasses.replace")
    fields = dataclasses.fields(cls)
    if any(not f.init for f in fields):
        raise TypeError(f"{cls.__name__} has fields __init__ does not take: use dataclasses.replace")
    return frozenset(f.name for f in fields)


def evolve(record: R, **changes: Any) -> R:
    """``dataclasses.replace`` for a frozen dataclass whose ``__init__`` only stores its fields:
    the same result, without re-running ``__init__`` over every field (the hot paths copy
    requests of forty fields per sweep point).  An unknown field is a ``TypeError``, as there."""
    cls: Any = type(record)
    names = _plain_fields(cls)
    for name in changes:
        if name not in names:
            raise TypeError(f"{type(record).__name__} has no field {name!r}")
    new: R = object.__new__(cls)
    new.__dict__.update(record.__dict__)
    new.__dict__.update(changes)
    return new
