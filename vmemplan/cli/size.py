"""`vmemplan size`: what vLLM does with each GPU's memory for one deployment."""

from __future__ import annotations

import typer

from vmemplan.cli._common import console, emit, reports_errors
from vmemplan.cli._options import (
    BlockSizeOpt, DtypeOpt, EagerOpt, GpuOpt, KvDtypeOpt, KvMemOpt, MaxModelLenOpt,
    MaxNumSeqsOpt, MinConcurrencyOpt, MinKvTokensOpt, MnbtOpt, ModelArg, NoColorOpt, PpOpt, PrefixOpt,
    RequestTokensOpt, RevisionOpt, TpOpt, UtilOpt, VersionOpt,
)
from vmemplan.cli._options import LimitMmOpt, MmEncoderTpModeOpt, SkipMmProfilingOpt, SpeculativeConfigOpt
from vmemplan.cli._options import DcpOpt, DpOpt, EplbOpt, EpOpt, QuantizationOpt, RedundantOpt, SamplerOpt
from vmemplan.render import OutputFormat


@reports_errors
def size(
    model: ModelArg,
    gpu: GpuOpt,
    gpu_memory_utilization: UtilOpt = None,
    max_model_len: MaxModelLenOpt = None,
    max_num_seqs: MaxNumSeqsOpt = None,
    max_num_batched_tokens: MnbtOpt = None,
    block_size: BlockSizeOpt = None,
    kv_cache_dtype: KvDtypeOpt = None,
    dtype: DtypeOpt = None,
    tensor_parallel_size: TpOpt = None,
    pipeline_parallel_size: PpOpt = None,
    enforce_eager: EagerOpt = None,
    kv_cache_memory: KvMemOpt = None,
    enable_prefix_caching: PrefixOpt = None,
    revision: RevisionOpt = None,
    vllm_version: VersionOpt = None,
    request_tokens: RequestTokensOpt = None,
    output_format: OutputFormat = typer.Option(OutputFormat.table, "--format", "-f",
                                               help="table, log (vLLM's lines), json, or tree."),
    no_color: NoColorOpt = False,
    min_concurrency: MinConcurrencyOpt = None,
    min_kv_tokens: MinKvTokensOpt = None,
    limit_mm_per_prompt: LimitMmOpt = None,
    skip_mm_profiling: SkipMmProfilingOpt = None,
    mm_encoder_tp_mode: MmEncoderTpModeOpt = None,
    speculative_config: SpeculativeConfigOpt = None,
    quantization: QuantizationOpt = None,
    data_parallel_size: DpOpt = None,
    enable_expert_parallel: EpOpt = None,
    enable_eplb: EplbOpt = None,
    num_redundant_experts: RedundantOpt = None,
    decode_context_parallel_size: DcpOpt = None,
    sampler: SamplerOpt = None,
) -> None:
    """Predict what vLLM does with each GPU's memory: weights, activations, CUDA graphs, KV pool.

    Examples:

        vmemplan size meta-llama/Llama-3.1-8B --gpu h100 --util 0.92

        vmemplan size ./config.json --gpu l40s -tp 2 --format json
    """
    from vmemplan.api import plan_from_flags

    plan = plan_from_flags(
        model=model, gpu=gpu, gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
        max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens, block_size=block_size,
        kv_cache_dtype=kv_cache_dtype, dtype=dtype, tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size, enforce_eager=enforce_eager,
        kv_cache_memory=kv_cache_memory, enable_prefix_caching=enable_prefix_caching, revision=revision,
        vllm_version=vllm_version, request_tokens=request_tokens, spinner=True,
        limit_mm_per_prompt=limit_mm_per_prompt, skip_mm_profiling=skip_mm_profiling,
        mm_encoder_tp_mode=mm_encoder_tp_mode, speculative_config=speculative_config,
        quantization=quantization, data_parallel_size=data_parallel_size,
        enable_expert_parallel=enable_expert_parallel, enable_eplb=enable_eplb,
        num_redundant_experts=num_redundant_experts, decode_context_parallel_size=decode_context_parallel_size,
        sampler=sampler,
    )
    if output_format is OutputFormat.json:
        from vmemplan.render.json_out import dumps

        emit(dumps(plan.to_json()))
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
               hint=f"--max-model-len {fits} would fit" if fits else
               "raise --gpu-memory-utilization, quantize, or add GPUs (-tp)")
        raise typer.Exit(3)
    if min_concurrency is not None or min_kv_tokens is not None:  # gates: exit 3 when not met
        from vmemplan.cli.concurrency import check_gates

        check_gates(plan, None, min_concurrency, request_tokens or plan.engine["max_model_len"], min_kv_tokens)
