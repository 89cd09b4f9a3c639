"""The lazy pieces of a sweep's grid: a ``start:stop:step`` range whose values are computed on
demand, and the product of the axes without copying them (``itertools.product`` would turn a
million-value range into a tuple first)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any, Literal

__all__ = ["Kind", "Steps", "product"]

Kind = Literal["int", "float", "str", "bool", "bytes"]


class Steps(Sequence[Any]):
    """The values of a ``start:stop:step`` range, computed on demand (exact decimals, converted to
    the flag's type): a million-value range costs a few objects, not a million."""

    def __init__(self, start: Decimal, step: Decimal, count: int, kind: Kind) -> None:
        self.start, self.step, self.size, self.kind = start, step, count, kind

    def __len__(self) -> int:
        return self.size

    def _at(self, i: int) -> Any:
        v = self.start + i * self.step
        return float(v) if self.kind == "float" else int(v)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self._at(i) for i in range(*index.indices(self.size)))
        i = index + self.size if index < 0 else index
        if not 0 <= i < self.size:
            raise IndexError(index)
        return self._at(i)

    def __iter__(self) -> Iterator[Any]:
        return (self._at(i) for i in range(self.size))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Steps):
            return (self.start, self.step, self.size, self.kind) == (other.start, other.step, other.size, other.kind)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == self.size and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.start, self.step, self.size, self.kind))

    def __repr__(self) -> str:
        return f"Steps({self.start}, step {self.step}, {self.size} values)"


def product(axes: Sequence[Sequence[Any]]) -> Iterator[tuple[Any, ...]]:
    """itertools.product without copying its inputs into tuples (a range stays lazy): the last
    axis changes fastest, the first slowest."""
    if any(len(a) == 0 for a in axes):
        return
    index = [0] * len(axes)
    while True:
        yield tuple(a[i] for a, i in zip(axes, index))
        k = len(axes) - 1
        while k >= 0:
            index[k] += 1
            if index[k] < len(axes[k]):
                break
            index[k] = 0
            k -= 1
        if k < 0:
            return
