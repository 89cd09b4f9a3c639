"""``@frozen``: a frozen dataclass that is cheap to define.

Every plan imports about a hundred frozen dataclasses (KV specs, the registry's records, the
result), and on the Python versions vmemplan supports the standard decorator compiles six
methods per class from source text (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__``, ``__delattr__``): that was most of a first plan's time.  ``@frozen`` lets
:func:`dataclasses.dataclass` compile only ``__init__``; the frozen ``__setattr__`` and
``__delattr__`` are closures over the class (the same test and message as the compiled ones);
``__init__`` stores the fields straight into the instance's ``__dict__`` (4x faster to build a
record of forty fields); ``__repr__``, ``__eq__`` and ``__hash__`` are shared and read the
fields through one :func:`operator.attrgetter`:

- ``repr`` is ``Name(field=value, ...)`` over the fields with ``repr=True``, as the standard one;
- ``==`` compares the fields with ``compare=True`` as a tuple, for instances of the very same
  class only (``NotImplemented`` otherwise), as the standard one;
- ``hash`` is the hash of the tuple of the fields that are hashed (``hash=True``, or
  ``compare=True`` when ``hash`` is unset), as the standard one for a frozen class.

A method the class body defines itself is kept, as :func:`dataclasses.dataclass` keeps it.  The
result is a normal dataclass: :func:`dataclasses.fields`, :func:`dataclasses.replace` and
pydantic see no difference.
"""

from __future__ import annotations

import dataclasses
import sys
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:  # typing has it from 3.11; the marker only informs type checkers
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: Any) -> Any:
        return lambda function: function

__all__ = ["frozen"]

T = TypeVar("T")


def _getter(names: tuple[str, ...]) -> Any:
    """A callable returning the tuple of ``names`` read off an object."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)


def _install(cls: Any, body: dict[str, Any]) -> None:
    fields = dataclasses.fields(cls)
    shown = tuple(f.name for f in fields if f.repr)
    compared = _getter(tuple(f.name for f in fields if f.compare))
    hashed = _getter(tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)))

    if "__repr__" not in body:
        def __repr__(self: Any) -> str:
            inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
            return f"{type(self).__qualname__}({inner})"

        __repr__.__qualname__ = f"{cls.__qualname__}.__repr__"
        cls.__repr__ = __repr__
    if "__eq__" not in body:
        def __eq__(self: Any, other: Any) -> Any:
            if other.__class__ is self.__class__:
                return compared(self) == compared(other)
            return NotImplemented

        __eq__.__qualname__ = f"{cls.__qualname__}.__eq__"
        cls.__eq__ = __eq__
    explicit_hash = body.get("__hash__", dataclasses.MISSING)
    if explicit_hash is dataclasses.MISSING or (explicit_hash is None and "__eq__" in body):
        def __hash__(self: Any) -> int:
            return hash(hashed(self))

        __hash__.__qualname__ = f"{cls.__qualname__}.__hash__"
        cls.__hash__ = __hash__


def _frozen_attr_methods(cls: Any, fields: Any, globals: Any) -> tuple[Any, Any]:
    """The frozen ``__setattr__``/``__delattr__`` :func:`dataclasses.dataclass` would compile
    from source text for ``cls`` (CPython 3.10-3.12, ``dataclasses._frozen_get_del_attr``), as
    closures: the same test (``type(self) is cls`` or a field's name), the same error text."""
    names = frozenset(f.name for f in fields)
    error = dataclasses.FrozenInstanceError

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    __setattr__.__qualname__ = f"{cls.__qualname__}.__setattr__"
    __delattr__.__qualname__ = f"{cls.__qualname__}.__delattr__"
    return __setattr__, __delattr__


#: dataclasses' own builder of the frozen attribute methods, where it has the shape
#: :func:`_frozen_attr_methods` stands in for (3.13 batches every method into one compile and
#: needs no stand-in); ``None`` elsewhere
_SHARED_FROZEN_ATTRS: Any = (
    getattr(dataclasses, "_frozen_get_del_attr", None) if sys.version_info < (3, 13) else None)


def _dict_assign(frozen: bool, name: str, value: str, self_name: str) -> str:
    """The line of the generated ``__init__`` that sets one field: straight into the instance's
    ``__dict__`` rather than through ``object.__setattr__`` (which the frozen ``__setattr__``
    forces dataclasses to use).  Same result for a class without ``__slots__``, about four times
    faster for a record of forty fields."""
    line = _FIELD_ASSIGN(frozen, name, value, self_name)  # its indentation (3.13 indents the line)
    return f"{line[:len(line) - len(line.lstrip())]}{self_name}.__dict__[{name!r}]={value}"


def _field_assign_shape(function: Any) -> bool:
    code = getattr(function, "__code__", None)
    return code is not None and code.co_varnames[:code.co_argcount] == ("frozen", "name", "value", "self_name")


#: dataclasses' writer of those lines (CPython 3.10-3.13), where it has the expected shape
_FIELD_ASSIGN: Any = getattr(dataclasses, "_field_assign", None)
if _FIELD_ASSIGN is not None and not _field_assign_shape(_FIELD_ASSIGN):  # pragma: no cover
    _FIELD_ASSIGN = None


#: dataclasses' test of a string annotation (``from __future__ import annotations``) for
#: ``ClassVar``, ``InitVar`` and ``KW_ONLY``: three regex matches and lookups per field
_IS_TYPE: Any = getattr(dataclasses, "_is_type", None)
_MARKERS = ("ClassVar", "InitVar", "KW_ONLY")


def _is_type_named(annotation: str, cls: Any, a_module: Any, a_type: Any, predicate: Any) -> bool:
    """dataclasses' ``_is_type``, answered False at once for an annotation that does not name
    one of the markers: vmemplan spells them out (no module-level alias such as ``CV =
    ClassVar``; tests/core/test_frozen.py checks the tree), so only such text can be one."""
    if not any(marker in annotation for marker in _MARKERS):
        return False
    return bool(_IS_TYPE(annotation, cls, a_module, a_type, predicate))


#: dataclasses' helpers that @frozen stands in for while it builds a class, where they have
#: the shape this module was written against (CPython 3.10-3.13)
_STAND_INS: dict[str, Any] = {name: fn for name, fn, present in (
    ("_frozen_get_del_attr", _frozen_attr_methods, _SHARED_FROZEN_ATTRS is not None),
    ("_field_assign", _dict_assign, _FIELD_ASSIGN is not None),
    ("_is_type", _is_type_named, _IS_TYPE is not None),
) if present}


@overload
def frozen(cls: type[T], /) -> type[T]: ...


@overload
def frozen(*, kw_only: bool = False) -> Any: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: Any = None, /, *, kw_only: bool = False) -> Any:
    """``@dataclass(frozen=True)`` (``@frozen(kw_only=True)`` for keyword-only fields), with the
    shared ``__repr__``/``__eq__``/``__hash__`` of this module."""

    def wrap(c: Any) -> Any:
        body = dict(c.__dict__)
        stand_ins = dict(_STAND_INS)
        if any("__slots__" in vars(k) for k in c.__mro__[:-1]):
            stand_ins.pop("_field_assign", None)  # a __dict__ store needs a __dict__
        originals = {name: getattr(dataclasses, name) for name in stand_ins}
        vars(dataclasses).update(stand_ins)
        try:
            out = dataclasses.dataclass(c, frozen=True, kw_only=kw_only, repr=False, eq=False)
        finally:
            vars(dataclasses).update(originals)
        _install(out, body)
        return out

    return wrap if cls is None else wrap(cls)
