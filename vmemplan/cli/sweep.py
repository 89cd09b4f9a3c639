"""`vmemplan sweep`: plan a grid of deployments (--vary), chart one output, solve for a target."""

from __future__ import annotations

from typing import Any

import typer

from vmemplan.cli._common import console, emit, gpu_completion, output_width, reports_errors
from vmemplan.cli._options import (
    ChartOpt,
    ChartXOpt,
    GateOn,
    GateOnOpt,
    MinConcurrencyOpt,
    MinKvTokensOpt,
    ModelArg,
    NoColorOpt,
    SolveOpt,
    VaryOpt,
    with_engine_flags,
)
from vmemplan.core.errors import TargetNotMet, UsageError
from vmemplan.render import SweepFormat, assert_never
from vmemplan.sweep import DEFAULT_MAX_POINTS


@reports_errors
@with_engine_flags
def sweep(
    model: ModelArg,
    vary: VaryOpt,
    gpu: str | None = typer.Option(None, "--gpu", help="GPU id or alias (or vary it: --vary gpu=l40s,a100-80g,h100).",
                                      autocompletion=gpu_completion, show_default=False),
    request_tokens: int | None = typer.Option(
        None, "--request-tokens", min=1, help="Also report the effective concurrency at this request length.",
        show_default=False),
    min_concurrency: MinConcurrencyOpt = None,
    min_kv_tokens: MinKvTokensOpt = None,
    gate_on: GateOnOpt = GateOn.central,
    solve: SolveOpt = False,
    chart: ChartOpt = None,
    chart_x: ChartXOpt = None,
    output_format: SweepFormat = typer.Option(SweepFormat.table, "--format", "-f", help="table, csv or json."),
    max_points: int = typer.Option(DEFAULT_MAX_POINTS, "--max-points", min=1,
                                   help="Refuse a grid of more points than this (CSV streams any size)."),
    no_color: NoColorOpt = False,
    *,
    engine: dict[str, Any],
) -> None:
    """Plan every combination of the --vary values; chart one output; --solve for a target.

    Examples:

        vmemplan sweep meta-llama/Llama-3.1-8B --gpu h100 --vary max-model-len=8192,16384,32768 --vary util=0.8:0.95:0.05

        vmemplan sweep meta-llama/Llama-3.1-70B --vary gpu=l40s,a100-80g,h100 --vary tp=1,2,4,8 --solve --min-concurrency 64 --request-tokens 4000
    """
    varies, varied = _parse_varies(vary, max_points)
    base = _base_request(model, gpu, engine, varied)
    target = _target(solve, min_concurrency, min_kv_tokens, request_tokens, gate_on)
    x_field = _chart_axis(chart, chart_x, request_tokens, varied)
    _check_grid_size(varies, max_points)
    source, stream = _start_sweep(model, base, varies, max_points, request_tokens, output_format)
    fixed = {k: v for k, v in base.items() if v is not None and k != "model"}
    if output_format is SweepFormat.csv and target is None and chart is None:
        _stream_csv(stream, varied, request_tokens)
        return
    from vmemplan.sweep import solve as solve_grid

    points = list(stream)
    result = solve_grid(points, varies, target) if target is not None else None
    _emit(output_format, points, varies, varied, source.model_id, fixed, result, request_tokens, chart, x_field,
          no_color)
    if result is not None and result.answer is None:
        assert target is not None
        raise TargetNotMet(f"no point of the {len(points):,}-point grid meets the target ({target.describe()})",
                           hint="widen the --vary ranges (more GPUs, larger tensor-parallel sizes, fp8 KV cache)")


def _parse_varies(vary: list[str] | None, max_points: int) -> tuple[list[Any], list[str]]:
    """(the parsed --vary options, the fields they vary); none, or one flag varied twice, is refused."""
    from vmemplan.sweep import parse_vary

    if not vary:
        raise UsageError("nothing to sweep: give at least one --vary FLAG=values",
                         hint="e.g. --vary max-model-len=8192,16384,32768")
    varies = [parse_vary(v, max_points) for v in vary]
    varied = [v.flag.field for v in varies]
    if len(set(varied)) != len(varied):
        raise UsageError("the same flag is varied twice")
    return varies, varied


def _base_request(model: str, gpu: str | None, engine: dict[str, Any], varied: list[str]) -> dict[str, Any]:
    """The request every grid point starts from; a flag both given and varied, or no GPU, is refused."""
    from vmemplan.core.units import parse_bytes

    engine = dict(engine)
    kv_cache_memory = engine.pop("kv_cache_memory")
    kv_mem = None
    if kv_cache_memory is not None:
        try:
            kv_mem = parse_bytes(kv_cache_memory)
        except ValueError:
            raise UsageError(f"--kv-cache-memory {kv_cache_memory!r} is not a byte count") from None
    base = dict(model=model, gpu=gpu, kv_cache_memory_bytes=kv_mem, **engine)
    both = [f for f in varied if base.get(f) is not None]
    if both:
        raise UsageError(f"--{both[0].replace('_', '-')} is both given and varied", hint="drop one of the two")
    if gpu is None and "gpu" not in varied and engine.get("gpu_total_memory") is None:
        raise UsageError("no GPU: give --gpu or --vary gpu=…")
    return base


def _target(solve: bool, min_concurrency: int | None, min_kv_tokens: int | None, request_tokens: int | None,
            gate_on: GateOn) -> Any:
    """The --solve target, or None when neither --solve nor a minimum is given."""
    from vmemplan.sweep import Target

    if solve or min_concurrency is not None or min_kv_tokens is not None:
        return Target(min_concurrency=min_concurrency, request_tokens=request_tokens, min_kv_tokens=min_kv_tokens,
                      gate_on=gate_on.value)
    return None


def _chart_axis(chart: str | None, chart_x: str | None, request_tokens: int | None, varied: list[str]) -> str:
    """The field along the chart's x axis (the first varied unless --chart-x); a bad --chart is refused."""
    from vmemplan.sweep import OUTPUTS, flag_spec

    if chart is not None and chart not in OUTPUTS:
        raise UsageError(f"--chart {chart!r} is not a sweep output", hint="one of: " + ", ".join(OUTPUTS))
    if chart == "concurrency_at_request_tokens" and request_tokens is None:
        raise UsageError("--chart concurrency_at_request_tokens needs --request-tokens")
    x_field = varied[0]
    if chart_x is not None:
        x_field = flag_spec(chart_x).field
        if x_field not in varied:
            raise UsageError(f"--chart-x {chart_x!r} is not a varied flag")
    return x_field


def _check_grid_size(varies: list[Any], max_points: int) -> None:
    from vmemplan.sweep import grid_size

    total = grid_size(varies)
    if total > max_points:
        raise UsageError(f"the grid has {total:,} points, more than --max-points {max_points:,}",
                         hint=f"vary fewer values, or pass --max-points {total} if you mean it")


def _start_sweep(model: str, base: dict[str, Any], varies: list[Any], max_points: int, request_tokens: int | None,
                 output_format: SweepFormat) -> tuple[Any, Any]:
    """(the model source, the lazy stream of the grid's evaluated points)."""
    from vmemplan.registry import load_registry
    from vmemplan.render.progress import spinner as _spinner
    from vmemplan.sources import load_model_source
    from vmemplan.sweep import SweepEvaluator, iter_sweep

    registry = load_registry()
    progress = _spinner if output_format is SweepFormat.table else None
    source = load_model_source(model, revision=base["revision"], bundled_dir=registry.models_dir, progress=progress,
                               config_format=base.get("config_format") or "auto")
    evaluator = SweepEvaluator({k: v for k, v in base.items() if k != "gpu" or v is not None},
                               registry=registry, source=source, request_tokens=request_tokens)
    return source, iter_sweep(evaluator, varies, max_points)


def _stream_csv(stream: Any, varied: list[str], request_tokens: int | None) -> None:
    import sys

    from vmemplan.render.sweep import sweep_csv_lines

    for line in sweep_csv_lines(stream, varied, with_concurrency=request_tokens is not None):
        sys.stdout.write(line)  # row by row: memory stays flat however long the sweep
    sys.stdout.flush()


def _emit(output_format: SweepFormat, points: list[Any], varies: list[Any], varied: list[str], model_id: str,
          fixed: dict[str, Any], result: Any, request_tokens: int | None, chart: str | None, x_field: str,
          no_color: bool) -> None:
    """Print the points (and the chart and the solve) in ``output_format``; off the table, the chart on stderr."""
    if output_format is SweepFormat.csv:
        from vmemplan.render.sweep import sweep_csv

        emit(sweep_csv(points, varied, with_concurrency=request_tokens is not None))
    elif output_format is SweepFormat.json:
        from vmemplan.render.json_out import dumps
        from vmemplan.render.sweep import sweep_json

        emit(dumps(sweep_json(points, varied, model=model_id, base=fixed, solve=result,
                              request_tokens=request_tokens)))
    elif output_format is SweepFormat.table:
        from vmemplan.render.sweep import render_solve, sweep_chart, sweep_table

        out = console(no_color=no_color)
        title = (f"{model_id}: {len(points):,} points"
                 + (" — " + ", ".join(f"{k}={v}" for k, v in fixed.items()) if fixed else ""))
        out.print(sweep_table(points, varied, title=title, with_concurrency=request_tokens is not None,
                              width=output_width()))
        if chart is not None:
            out.print(sweep_chart(points, varies, chart, x_field))
        if result is not None:
            out.print(render_solve(result, varied))
    else:
        assert_never(output_format)
    if chart is not None and output_format is not SweepFormat.table:
        from vmemplan.render.sweep import sweep_chart

        console(stderr=True, no_color=no_color).print(sweep_chart(points, varies, chart, x_field))
