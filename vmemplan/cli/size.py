"""`vmemplan size`: what vLLM does with each GPU's memory for one deployment."""

from __future__ import annotations

from typing import Any

import typer

from vmemplan.cli._common import console, emit, reports_errors
from vmemplan.cli._options import (
    GpuOpt, MinConcurrencyOpt, MinKvTokensOpt, ModelArg, NoColorOpt, RequestTokensOpt, with_engine_flags,
)
from vmemplan.render import OutputFormat


@reports_errors
@with_engine_flags
def size(
    model: ModelArg,
    gpu: GpuOpt = None,
    request_tokens: RequestTokensOpt = None,
    output_format: OutputFormat = typer.Option(OutputFormat.table, "--format", "-f",
                                               help="table, log (vLLM's lines), json, or tree."),
    no_color: NoColorOpt = False,
    min_concurrency: MinConcurrencyOpt = None,
    min_kv_tokens: MinKvTokensOpt = None,
    *,
    engine: dict[str, Any],
) -> None:
    """Predict what vLLM does with each GPU's memory: weights, activations, CUDA graphs, KV pool.

    Every vLLM flag of the release is accepted (as `vllm serve` parses it), and a whole command
    after `--`; flags with no GPU-memory effect are listed, flags not modelled are warned about.

    Examples:

        vmemplan size meta-llama/Llama-3.1-8B --gpu h100 --util 0.92

        vmemplan size ./config.json --gpu l40s -tp 2 --format json

        vmemplan size --gpu h100 -- vllm serve meta-llama/Llama-3.1-8B --max-model-len 32k --port 8000
    """
    from vmemplan.cli._vllm_args import current_vllm_command
    from vmemplan.request.engine import plan_for_command

    vllm_command = current_vllm_command()  # vLLM flags beyond vmemplan's own, or a pasted command
    # plan_from_flags plus --max-model-len auto, the not-modelled warnings and vLLM's refusals
    plan, refusal_hint = plan_for_command(vllm_command, model=model, gpu=gpu, request_tokens=request_tokens,
                                          spinner=True, **engine)
    if output_format is OutputFormat.json:
        from vmemplan.render.json_out import dumps

        data = plan.to_json()
        data["vllm_args"] = (vllm_command.classes_json() if vllm_command is not None else  # additive field
                             {"argument_table": None, "program": "flags", "modelled": [],
                              "no_memory_effect": [], "not_modelled": [], "reasons": {}})
        emit(dumps(data))
    elif output_format is OutputFormat.log:
        emit("".join(line + "\n" for line in plan.log_lines))
    else:
        from vmemplan.render.table import render_table, render_tree

        out = console(no_color=no_color)
        out.print(render_tree(plan) if output_format is OutputFormat.tree else render_table(plan))
    if not plan.verdict.starts:
        from vmemplan.cli._common import report

        fits = plan.verdict.max_model_len_that_fits
        report(f"vLLM would not start: {plan.verdict.reason}",
               hint=refusal_hint or (f"--max-model-len {fits} would fit" if fits else
                                     "raise --gpu-memory-utilization, quantize, or add GPUs (-tp)"))
        raise typer.Exit(3)
    if min_concurrency is not None or min_kv_tokens is not None:  # gates: exit 3 when not met
        from vmemplan.cli.concurrency import check_gates

        check_gates(plan, None, min_concurrency, request_tokens or plan.engine["max_model_len"], min_kv_tokens)
