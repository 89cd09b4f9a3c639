"""annotated_types' constraint markers, imported only when pydantic reads a record's annotations.

Records (:mod:`vmemplan.core.records`) state their bounds as ``Annotated[int, at.Ge(1)]``.  Their
modules use ``from __future__ import annotations``, so an annotation stays a string until pydantic
evaluates it to validate a freshly read file; only then does ``at.Ge`` resolve here (PEP 562), and
only then is ``annotated_types`` imported.  A run served from the registry snapshot never needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from annotated_types import Ge, Gt, Le, Lt, MinLen

__all__ = ["Ge", "Gt", "Le", "Lt", "MinLen"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        import annotated_types

        return getattr(annotated_types, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
