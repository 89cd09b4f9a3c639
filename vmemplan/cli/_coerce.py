"""Plain CLI values coerced without building a pydantic ``TypeAdapter`` per option.

typer (0.26–0.29) coerces every option's value, given or not, through a pydantic
``TypeAdapter`` it builds on first use; a planning command has ~40 options, so every run paid
for importing pydantic and generating its first core schema (about half of ``size --format
json``'s own time) although no option was ever anything but a plain number, word or choice.

:func:`install` gives each plain option (``str``, ``int``, ``float``, ``bool``, an ``Enum`` of choices; no
clamp, parser or file) a runtime coercer that converts the values it can convert exactly
as typer would -- digits to ``int``, a decimal to ``float``, a choice's exact value to the
choice, a value inside the option's ``min``/``max`` -- and hands every other value (``1e3``, ``" 12"``, a wrong choice) to typer's own
adapter, built then, so odd values and error messages stay typer's.  ``tests/cli/test_coerce.py``
checks the two agree value for value.

When typer's internals are not the ones this was written against, :func:`install` does
nothing and typer coerces as it always did.
"""

from __future__ import annotations

import enum
from typing import Any

from vmemplan.core.patterns import lazy

try:  # typer's private runtime-coercion seam (0.26+); absent elsewhere
    from typer._coercion import RuntimeParam, build_runtime_param
except ImportError:  # pragma: no cover - another typer
    RuntimeParam = None  # type: ignore[assignment,misc]
    build_runtime_param = None  # type: ignore[assignment]

#: what ``int()`` / ``float()`` read exactly as pydantic's lax mode does; longer or stranger
#: spellings go to typer's adapter
_INT = lazy(r"-?[0-9]{1,18}\Z")
_FLOAT = lazy(r"-?[0-9]{1,18}(\.[0-9]{1,18})?\Z")


def _plain(descriptor: Any) -> str | None:
    """The kind of coercer ``descriptor`` can use, or ``None`` when typer must do it."""
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None or info.parser is not None:
        return None
    if getattr(info, "clamp", False) or getattr(info, "click_type", None) is not None:
        return None
    annotation = descriptor.annotation
    if annotation in (str, int, float, bool):
        return annotation.__name__
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum) and info.case_sensitive:
        return "choice"
    return None


if RuntimeParam is not None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class _PlainRuntimeParam(RuntimeParam):  # type: ignore[misc,valid-type]
        """Exact conversions for the common spellings; typer's adapter for the rest."""

        kind: str = "str"
        descriptor: Any = None

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            got = self._fast(value, ctx)
            if got is not None and self._in_range(got):
                return got
            return build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

        def _fast(self, value: Any, ctx: Any) -> Any:
            kind = self.kind
            if type(value) is str:
                if kind == "str":
                    return value
                if kind == "int" and _INT.match(value):
                    return int(value)
                if kind == "float" and _FLOAT.match(value):
                    return float(value)
                if kind == "choice" and (ctx is None or ctx.token_normalize_func is None):
                    for choice in self.annotation:
                        if str(choice.value) == value:
                            return choice
                return None
            if type(value) is self.annotation:
                return value
            if kind == "float" and type(value) is int:
                return float(value)
            return None

        def _in_range(self, value: Any) -> bool:
            low, high = self.parameter_info.min, self.parameter_info.max
            if low is None and high is None:
                return True
            return (low is None or value >= low) and (high is None or value <= high)


def install(params: list[Any]) -> int:
    """Give each plain parameter of a command the fast coercer; the number given one."""
    if RuntimeParam is None:
        return 0
    count = 0
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", "absent") is not None:
            continue
        kind = _plain(descriptor)
        if kind is None:
            continue
        param._runtime_param = _PlainRuntimeParam(
            parameter_info=descriptor.parameter_info, annotation=descriptor.annotation,
            kind=kind, descriptor=descriptor)
        count += 1
    return count
