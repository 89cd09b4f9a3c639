"""`vmemplan size`: what vLLM does with each GPU's memory for one deployment."""

from __future__ import annotations

from typing import Any

import typer

from vmemplan.cli._common import console, emit, reports_errors
from vmemplan.cli._options import (
    GateOn, GateOnOpt, GpuOpt, MinConcurrencyOpt, MinKvTokensOpt, ModelArg, NoColorOpt, RequestTokensOpt,
    with_engine_flags,
)
from vmemplan.render import OutputFormat


@reports_errors
@with_engine_flags
def size(
    model: ModelArg,
    gpu: GpuOpt,
    request_tokens: RequestTokensOpt = None,
    output_format: OutputFormat = typer.Option(OutputFormat.table, "--format", "-f",
                                               help="table, log (vLLM's lines), json, or tree."),
    no_color: NoColorOpt = False,
    min_concurrency: MinConcurrencyOpt = None,
    min_kv_tokens: MinKvTokensOpt = None,
    gate_on: GateOnOpt = GateOn.central,
    *,
    engine: dict[str, Any],
) -> None:
    """Predict what vLLM does with each GPU's memory: weights, activations, CUDA graphs, KV pool.

    Examples:

        vmemplan size meta-llama/Llama-3.1-8B --gpu h100 --util 0.92

        vmemplan size ./config.json --gpu l40s -tp 2 --format json
    """
    from vmemplan.api import plan_from_flags

    plan = plan_from_flags(model=model, gpu=gpu, request_tokens=request_tokens, spinner=True, **engine)
    if output_format is OutputFormat.json:
        from vmemplan.render.json_out import dumps, plan_json

        emit(dumps(plan_json(plan)))
    elif output_format is OutputFormat.log:
        from vmemplan.render.vllm_log import log_lines

        emit("".join(line + "\n" for line in log_lines(plan)))
    else:
        from vmemplan.render.table import render_table, render_tree

        out = console(no_color=no_color)
        out.print(render_tree(plan) if output_format is OutputFormat.tree else render_table(plan))
    if not plan.verdict.starts:
        from vmemplan.cli._common import report

        fits = plan.verdict.max_model_len_that_fits
        report(f"vLLM would not start: {plan.verdict.reason}",
               hint=f"--max-model-len {fits} would fit" if fits else
               "raise --gpu-memory-utilization, quantize, or add GPUs (-tp)")
        raise typer.Exit(3)
    if min_concurrency is not None or min_kv_tokens is not None:  # gates: exit 3 when not met
        from vmemplan.cli.concurrency import check_gates

        check_gates(plan, None, min_concurrency, request_tokens or plan.engine.max_model_len, min_kv_tokens,
                    gate_on.value)
