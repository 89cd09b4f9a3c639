"""``@frozen`` classes behave as ``@dataclass(frozen=True)`` ones: same errors, same equality."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest

from vmemplan.core.frozen import frozen


@frozen
class Mine:
    x: int
    y: str = "a"


@dataclasses.dataclass(frozen=True)
class Std:
    x: int
    y: str = "a"


class MineChild(Mine):  # not a dataclass: may set attributes that are not fields
    pass


class StdChild(Std):
    pass


@pytest.mark.parametrize("name", ["x", "y", "other"])
def test_assigning_raises_as_the_standard_frozen_class_does(name: str) -> None:
    errors = []
    for obj in (Mine(1), Std(1)):
        with pytest.raises(dataclasses.FrozenInstanceError) as caught:
            setattr(obj, name, 2)
        errors.append(str(caught.value))
        with pytest.raises(dataclasses.FrozenInstanceError) as caught:
            delattr(obj, name)
        errors.append(str(caught.value))
    assert errors[:2] == errors[2:]
    assert errors[0] == f"cannot assign to field {name!r}"
    assert errors[1] == f"cannot delete field {name!r}"


def test_a_plain_subclass_sets_non_fields_but_not_fields() -> None:
    for child in (MineChild(1), StdChild(1)):
        child.extra = 5  # type: ignore[attr-defined]
        assert child.extra == 5  # type: ignore[attr-defined]
        del child.extra  # type: ignore[attr-defined]
        with pytest.raises(dataclasses.FrozenInstanceError):
            child.x = 3  # type: ignore[misc]


def test_equality_hash_repr_replace() -> None:
    a, b = Mine(1), Mine(1, "a")
    assert a == b and hash(a) == hash(b) and a != Mine(2)
    assert repr(a) == "Mine(x=1, y='a')" == repr(Std(1)).replace("Std", "Mine")
    assert dataclasses.replace(a, y="b") == Mine(1, "b")
    assert [f.name for f in dataclasses.fields(Mine)] == ["x", "y"]
    assert Mine.__setattr__.__qualname__ == "Mine.__setattr__"


@frozen
class WithFactory:
    a: int
    items: tuple = dataclasses.field(default_factory=tuple)
    b: str = "z"

    def __post_init__(self) -> None:
        object.__setattr__(self, "b", self.b.upper())


@dataclasses.dataclass(frozen=True)
class StdWithFactory:
    a: int
    items: tuple = dataclasses.field(default_factory=tuple)
    b: str = "z"

    def __post_init__(self) -> None:
        object.__setattr__(self, "b", self.b.upper())


@frozen(kw_only=True)
class KwChild(WithFactory):
    c: float = 1.5


def test_init_stores_what_the_standard_init_stores() -> None:
    assert vars(WithFactory(1)) == vars(StdWithFactory(1)) == {"a": 1, "items": (), "b": "Z"}
    assert vars(WithFactory(2, (3,), b="q")) == vars(StdWithFactory(2, (3,), b="q"))
    assert vars(KwChild(4, c=2.0)) == {"a": 4, "items": (), "b": "Z", "c": 2.0}
    assert dataclasses.replace(KwChild(4), a=5) == KwChild(5)
    with pytest.raises(TypeError):
        WithFactory()  # type: ignore[call-arg]


def test_markers_are_spelled_out_in_vmemplan() -> None:
    """@frozen answers dataclasses' ClassVar / InitVar / KW_ONLY test by name
    (frozen._is_type_named): no module of vmemplan may alias them."""
    import ast
    from pathlib import Path

    import vmemplan

    for path in Path(vmemplan.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute)):
                name = node.value.id if isinstance(node.value, ast.Name) else node.value.attr
                assert name not in ("ClassVar", "InitVar", "KW_ONLY"), f"{path}: alias of {name}"
            if isinstance(node, ast.alias) and node.name in ("ClassVar", "InitVar", "KW_ONLY"):
                assert node.asname in (None, node.name), f"{path}: {node.name} imported as {node.asname}"


@frozen
class WithMarkers:
    a: int
    counter: ClassVar[int] = 0  # noqa: RUF012


def test_classvar_is_still_not_a_field() -> None:
    assert [f.name for f in dataclasses.fields(WithMarkers)] == ["a"]
