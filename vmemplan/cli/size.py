"""`vmemplan size`: what vLLM does with each GPU's memory for one deployment."""

from __future__ import annotations

from typing import Any

import typer

from vmemplan.cli._common import console, emit, output_width, reports_errors
from vmemplan.cli._options import (
    GateOn,
    GateOnOpt,
    GpuOpt,
    MinConcurrencyOpt,
    MinKvTokensOpt,
    ModelArg,
    NoColorOpt,
    RequestTokensOpt,
    with_engine_flags,
)
from vmemplan.render import OutputFormat, assert_never


@reports_errors
@with_engine_flags
def size(
    model: ModelArg,
    gpu: GpuOpt = None,
    request_tokens: RequestTokensOpt = None,
    output_format: OutputFormat = typer.Option(OutputFormat.table, "--format", "-f",
                                               help="table, log (vLLM's lines), json, or tree."),
    quiet: bool = typer.Option(False, "--quiet", help="Print only the verdict line (the exit code says the rest)."),
    no_color: NoColorOpt = False,
    min_concurrency: MinConcurrencyOpt = None,
    min_kv_tokens: MinKvTokensOpt = None,
    gate_on: GateOnOpt = GateOn.central,
    *,
    engine: dict[str, Any],
) -> None:
    """Predict what vLLM does with each GPU's memory: weights, activations, CUDA graphs, KV pool.

    The first and the last line are the verdict: does vLLM start, its KV cache in tokens, how
    many requests of the context length run at once, and which limit binds.

    Every vLLM flag of the release is accepted (as `vllm serve` parses it), and a whole command
    after `--`; flags with no GPU-memory effect are listed, flags not modelled are warned about.

    Examples:

        vmemplan size meta-llama/Llama-3.1-8B --gpu h100 --util 0.92

        vmemplan size ./config.json --gpu l40s -tp 2 --format json

        vmemplan size --gpu h100 -- vllm serve meta-llama/Llama-3.1-8B --max-model-len 32k --port 8000
    """
    from vmemplan.cli._vllm_args import current_vllm_command
    from vmemplan.concurrency import headline
    from vmemplan.request.engine import plan_for_command

    vllm_command = current_vllm_command()  # vLLM flags beyond vmemplan's own, or a pasted command
    flags = dict(model=model, gpu=gpu, request_tokens=request_tokens, **engine)
    # plan_from_flags plus --max-model-len auto, the not-modelled warnings and vLLM's refusals
    plan, refusal_hint = plan_for_command(vllm_command, spinner=not quiet, **flags)
    gates = None
    if min_concurrency is not None or min_kv_tokens is not None:
        from vmemplan.gates import evaluate_gates

        gates = evaluate_gates(plan, min_concurrency=min_concurrency, min_kv_tokens=min_kv_tokens,
                               request_tokens=request_tokens or plan.engine.max_model_len, gate_on=gate_on.value)
    head = headline(plan, request_tokens)
    if quiet:
        from vmemplan.render.verdict import verdict_line

        emit(verdict_line(head) + "\n")
    elif output_format is OutputFormat.json:
        from vmemplan.render.json_out import dumps, plan_json

        data = plan_json(plan, gates=gates)
        data["vllm_args"] = (vllm_command.classes_json() if vllm_command is not None else  # additive field
                             {"argument_table": None, "program": "flags", "modelled": [],
                              "no_memory_effect": [], "not_modelled": [], "reasons": {}})
        emit(dumps(data))
    elif output_format is OutputFormat.log:
        from vmemplan.render.vllm_log import log_lines

        emit("".join(line + "\n" for line in log_lines(plan)))
    elif output_format is OutputFormat.table or output_format is OutputFormat.tree:
        from vmemplan.render.table import render_table, render_tree

        out = console(no_color=no_color)
        render = render_tree if output_format is OutputFormat.tree else render_table
        out.print(render(plan, head, columns=output_width()))
    else:
        assert_never(output_format)
    if not plan.verdict.starts:
        from vmemplan.advice import find_fixes
        from vmemplan.cli._common import report
        from vmemplan.render.hints import fix_hint

        if not quiet:
            report(f"vLLM would not start: {plan.verdict.reason}",
                   hint=refusal_hint or fix_hint(find_fixes(flags, plan)))
        raise typer.Exit(3)
    if gates:
        from vmemplan.cli.concurrency import fail_gates

        fail_gates(gates, model=model, gpu=gpu, engine=engine)
