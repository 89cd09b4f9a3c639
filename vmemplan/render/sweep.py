"""Rendering for `vmemplan sweep`: a table, CSV, JSON, a terminal chart and the solve answer."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from vmemplan.core.units import GIB

if TYPE_CHECKING:
    from rich.console import RenderableType

    from vmemplan.sweep import SolveResult, SweepPoint, Vary

__all__ = ["sweep_csv", "sweep_csv_lines", "sweep_json", "sweep_table", "sweep_chart", "render_solve", "CSV_OUTPUTS", "TABLE_ROW_LIMIT"]

SCHEMA_VERSION = 1
CSV_OUTPUTS = ("weights_bytes", "available_kv_cache_bytes", "kv_cache_tokens", "max_concurrency", "starts",
               "num_blocks")
TABLE_ROW_LIMIT = 500


def _csv_value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def _csv_outputs(with_concurrency: bool) -> list[str]:
    return list(CSV_OUTPUTS) + (["concurrency_at_request_tokens"] if with_concurrency else []) + ["error"]


def _csv_line(row: Sequence[Any]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(row)
    return buf.getvalue()


def sweep_csv_lines(points: Iterable[SweepPoint], varied: Sequence[str], *,
                    with_concurrency: bool = False) -> Iterator[str]:
    """The CSV one line at a time (header first), so that a long sweep streams in flat memory."""
    outputs = _csv_outputs(with_concurrency)
    yield _csv_line([*varied, *outputs])
    for p in points:
        yield _csv_line([_csv_value(p.values.get(f)) for f in varied] + [_csv_value(getattr(p, o)) for o in outputs])


def sweep_csv(points: Sequence[SweepPoint], varied: Sequence[str], *, with_concurrency: bool = False) -> str:
    """Header: the varied flags (vLLM's names, underscores), then the outputs; one row a point."""
    return "".join(sweep_csv_lines(points, varied, with_concurrency=with_concurrency))


def sweep_json(points: Sequence[SweepPoint], varied: Sequence[str], *, model: str, base: dict[str, Any],
               solve: SolveResult | None = None, request_tokens: int | None = None) -> dict[str, Any]:
    """The sweep JSON contract (schema_version 1): fields may be added, never renamed."""
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "model": model,
        "fixed": base,
        "varied": list(varied),
        "request_tokens": request_tokens,
        "points": [p.to_json(varied) for p in points],
    }
    if solve is not None:
        out["solve"] = solve.to_json(varied)
    return out


def _cell(field: str, v: Any) -> str:
    if v is None:
        return "–"
    if field.endswith("_bytes") and isinstance(v, int):
        return f"{v / GIB:,.2f} GiB"
    if isinstance(v, float):
        return f"{v:,.4g}" if field != "max_concurrency" else f"{v:,.2f}x"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def sweep_table(points: Sequence[SweepPoint], varied: Sequence[str], *, title: str,
                with_concurrency: bool = False, limit: int = TABLE_ROW_LIMIT, width: int = 100) -> RenderableType:
    """The points as a table that fits ``width`` columns: figures are never cut; the byte columns
    and vLLM's fractional concurrency are left out first when space runs short."""
    from rich.console import Group
    from rich.text import Text

    from vmemplan.render.fit import Col, fit_table

    cols = ["weights_bytes", "available_kv_cache_bytes", "kv_cache_tokens", "max_concurrency"]
    if with_concurrency:
        cols.append("concurrency_at_request_tokens")
    heads = {"weights_bytes": Col("weights", justify="right", drop=3),
             "available_kv_cache_bytes": Col("KV pool", justify="right", drop=4),
             "kv_cache_tokens": Col("KV tokens", justify="right"),
             "max_concurrency": Col("concurrency @max_model_len", justify="right", short="conc. @max len", drop=2),
             "concurrency_at_request_tokens": Col("concurrency @request", justify="right", short="conc. @request")}
    spec = [Col(f) for f in varied] + [heads[c] for c in cols] + [Col("starts")]
    shown = points if len(points) <= limit else list(points[: limit // 2]) + list(points[-limit // 2:])
    rows: list[list[str]] = []
    styles: list[str | None] = []
    for i, p in enumerate(shown):
        if len(points) > limit and i == limit // 2:
            rows.append(["…"] * len(spec))
            styles.append(None)
        status = "yes" if p.starts else ("refused" if p.error else "no")
        rows.append([_cell(f, p.values.get(f)) for f in varied] + [_cell(c, getattr(p, c)) for c in cols] + [status])
        styles.append(None if p.starts else "red")
    t, dropped = fit_table(spec, rows, width, row_styles=styles)
    parts: list[Any] = [Text(title, style="bold"), t]
    if dropped:
        parts.append(Text(f"left out to fit {width} columns: {', '.join(dropped)} (--format csv or json has them)",
                          style="dim"))
    why: dict[str, int] = {}
    for p in points:
        if not p.starts:
            key = ("refused: " + p.error) if p.error else (p.reason or "would not start")
            why[key] = why.get(key, 0) + 1
    for reason, n in why.items():
        parts.append(Text(f"{n:,} point(s) {'' if reason.startswith('refused') else 'would not start: '}{reason}",
                          style="red"))
    if len(points) > limit:
        parts.append(Text(f"{len(points):,} points; the middle ones are left out here: use --format csv or json "
                          "for every point", style="dim"))
    return Group(*parts)


def sweep_chart(points: Sequence[SweepPoint], varies: Sequence[Vary], output: str, x_field: str,
                width: int = 50, max_rows: int = 40) -> RenderableType:
    """One output against one varied flag, as horizontal bars; the other varied flags held at
    their first values."""
    from rich.text import Text

    others = {v.flag.field: v.values[0] for v in varies if v.flag.field != x_field}
    sel = [p for p in points if all(p.values.get(f) == val for f, val in others.items())]
    if len(sel) > max_rows:
        step = (len(sel) - 1) / (max_rows - 1)
        sel = [sel[round(i * step)] for i in range(max_rows)]
    vals = [p.output(output) for p in sel]
    nums = [float(v) for v in vals if v is not None]
    text = Text()
    held = ", ".join(f"{f}={v}" for f, v in others.items())
    text.append(f"{output} by {x_field}" + (f" ({held})" if held else "") + "\n", style="bold")
    top = max(nums) if nums else 0.0
    labels = [_cell(x_field, p.values.get(x_field)) for p in sel]
    lw = max((len(s) for s in labels), default=1)
    for label, p, v in zip(labels, sel, vals):
        text.append(f"{label:>{lw}} │")
        if v is None:
            text.append(" (no plan)\n", style="red")
            continue
        cells = round(float(v) / top * width) if top > 0 else 0
        text.append("█" * cells, style="green" if p.starts else "red")
        text.append(f" {_cell(output, v)}" + ("" if p.starts else " (would not start)") + "\n")
    return text


def render_solve(result: SolveResult, varied: Sequence[str]) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = [Text(f"target: {result.target.describe()}", style="bold")]
    if result.answer is None:
        parts.append(Text("✘ no point of the grid meets the target", style="bold red"))
    else:
        a = result.answer
        flags = " ".join(f"--{f.replace('_', '-')} {a.values[f]}" for f in varied)
        parts.append(Text(f"✔ answer: {flags}", style="bold green"))
        got = []
        if result.target.min_concurrency is not None:
            got.append(f"{a.concurrency_at_request_tokens:,} requests of {result.target.request_tokens:,} tokens")
        got.append(f"{a.kv_cache_tokens:,} KV tokens")
        parts.append(Text("  gives " + ", ".join(got) + f" ({result.meeting:,} grid points meet the target)"))
        words = {"gpu": "cheapest GPU (list order)", "tensor_parallel_size": "smallest tensor-parallel size",
                 "pipeline_parallel_size": "smallest pipeline-parallel size",
                 "max_model_len": "largest max_model_len", "gpu_memory_utilization": "lowest utilization",
                 "kv_cache_memory_bytes": "least KV memory"}
        for f, v in result.best.items():
            parts.append(Text(f"  {words.get(f, 'first ' + f + ' (list order)')} that meets it anywhere: {v}"))
    if result.levers:
        lv = result.levers[0]
        metric = "requests at once" if result.target.min_concurrency is not None else "KV tokens"
        parts.append(Text(f"biggest lever from the first grid point: --{lv.flag.replace('_', '-')} {lv.from_value} → "
                          f"{lv.to_value}: {lv.before:,.0f} → {lv.after:,.0f} {metric}"
                          + (" (meets the target)" if lv.meets else ""), style="bold"))
        for other in result.levers[1:]:
            parts.append(Text(f"  then --{other.flag.replace('_', '-')} {other.from_value} → {other.to_value}: "
                              f"{other.before:,.0f} → {other.after:,.0f}" + (" (meets)" if other.meets else ""),
                              style="dim"))
    return Group(*parts)
