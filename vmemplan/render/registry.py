"""`vmemplan gpus` and `vmemplan models`: the registry's tables and JSON, for people and scripts.

Ids come first and whole (they are what users type); a table that does not fit drops columns
instead (see :mod:`vmemplan.render.fit`).  ``models`` shows each model's family (its
``model_type``) and the aliases that select it offline, and leaves registry-internal entries
out unless asked (see :func:`is_internal`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from vmemplan.core.frozen import frozen
from vmemplan.core.units import GIB

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = ["ModelEntry", "is_internal", "gpus_json", "gpus_table", "models_json", "models_table", "model_entries"]

#: Entries of the bundled registry that are not models to type: variant copies selected with a
#: ``:variant`` suffix, configs whose repo is unknown, and configs of GGUF and MLX repos (vLLM
#: serves neither format as such; they stand in for the original model, reachable by its alias).
_INTERNAL = (re.compile(r":"), re.compile(r"^unknown/", re.I), re.compile(r"gguf", re.I),
             re.compile(r"^mlx-community/", re.I), re.compile(r"(^|[-_/])mlx([-_]|$)", re.I))


def is_internal(model_id: str) -> bool:
    """True for a bundled entry that is registry-internal (see :data:`_INTERNAL`)."""
    return any(p.search(model_id) for p in _INTERNAL)


@frozen
class ModelEntry:
    """One row of `vmemplan models`: the id to type, the family, and the other ids that select it."""

    id: str
    family: str
    aliases: tuple[str, ...] = ()
    internal: bool = False
    target: str = field(default="")  # the bundled entry it selects, when it is not ``id`` itself
    architecture: str = ""
    planned: bool = True  # False: a bundled config whose architecture `size` refuses today


def model_entries(ids: Iterable[str], families: dict[str, str], aliases: dict[str, str], *,
                  show_all: bool = False, unplanned: Iterable[str] = (),
                  architectures: dict[str, str] | None = None) -> list[ModelEntry]:
    """The rows: every bundled id with its aliases; an internal entry, or one whose architecture
    vmemplan does not plan yet (``unplanned``), is hidden unless ``show_all``; a hidden internal
    entry stands under its first alias when it has one."""
    unplanned = set(unplanned)
    architectures = architectures or {}
    by_target: dict[str, list[str]] = {}
    for alias, target in aliases.items():
        by_target.setdefault(target.lower(), []).append(alias)
    out = []
    for mid in ids:
        names = by_target.get(mid.lower(), [])
        internal = is_internal(mid)
        family = families.get(mid, "?")
        arch, planned = architectures.get(mid, ""), mid not in unplanned
        if not planned and not show_all:
            continue
        if internal and not show_all:
            if names:  # the alias is the model people mean: list it under its own name
                out.append(ModelEntry(names[0], family, tuple(names[1:]), target=mid, architecture=arch))
            continue
        out.append(ModelEntry(mid, family, tuple(names), internal, architecture=arch, planned=planned))
    return sorted(out, key=lambda e: (e.id.lower(), e.id))


def models_json(entries: Sequence[ModelEntry]) -> list[str]:
    """The JSON contract of `vmemplan models`: the ids, sorted (schema unchanged; aliases are in
    the table)."""
    return [e.id for e in entries]


def models_table(entries: Sequence[ModelEntry], width: int, *, hidden: int = 0, unplanned: int = 0) -> RenderableType:
    """Model ids (aliases indented under them) and families, fitting ``width``."""
    from rich.console import Group
    from rich.text import Text

    from vmemplan.render.fit import Col, fit_table

    rows = []
    for e in entries:
        rows.append([e.id + (" (internal)" if e.internal else ""), e.family, e.architecture])
        rows.extend([f"  = {a}", "", ""] for a in e.aliases)
    table, _ = fit_table([Col("model (aliases indented)", short="model"), Col("family"),
                          Col("architecture", short="arch", drop=1)], rows, width)
    title = f"{len(entries)} bundled models (usable offline, case-insensitive)"
    parts: list[Any] = [Text(title, style="bold"), table]
    if hidden:
        parts.append(Text(f"{hidden} registry-internal entries (variant copies, GGUF/MLX repos, unknown/…) "
                          "left out: --all lists them", style="dim"))
    if unplanned:
        parts.append(Text(f"{unplanned} bundled configs whose architecture vmemplan does not plan yet left out: "
                          "--all lists them", style="dim"))
    return Group(*parts)


def gpus_json(gpus: Iterable[Any]) -> list[dict[str, Any]]:
    return [{"id": g.id, "aliases": list(g.aliases), "name": g.name, "vendor": g.vendor, "arch": g.arch,
             "total_memory_bytes": g.total_memory_bytes, "nvml_total_bytes": g.nvml_total_bytes,
             "memory_bandwidth_tbps": g.memory_bandwidth_tbps, "bf16_tflops": g.bf16_tflops,
             "fp8_tflops": g.fp8_tflops, "total_memory_evidence": g.total_memory_evidence} for g in gpus]


def gpus_table(gpus: Sequence[Any], width: int) -> RenderableType:
    """id first and whole, then total GiB; name, aliases, arch and evidence as space allows."""
    from rich.console import Group
    from rich.text import Text

    from vmemplan.render.fit import Col, fit_table

    cols = [Col("id"), Col("total GiB", justify="right", short="GiB"), Col("name", wrap=True),
            Col("aliases", wrap=True, drop=2), Col("arch", drop=3), Col("evidence", drop=4)]
    rows = [[g.id, f"{g.total_memory_bytes / GIB:.2f}", g.name, ", ".join(a for a in g.aliases if " " not in a),
             g.arch, g.total_memory_evidence] for g in gpus]
    table, dropped = fit_table(cols, rows, width)
    parts: list[Any] = [Text("GPUs (total = what CUDA reports, the figure vLLM multiplies by util)", style="bold"),
                        table]
    if dropped:
        parts.append(Text(f"left out to fit {width} columns: {', '.join(dropped)} (--format json has every field)",
                          style="dim"))
    return Group(*parts)
