"""Annotated option types shared by the commands, with vLLM's flag names."""

from __future__ import annotations

import enum
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any

import typer

from vmemplan.cli._common import gpu_completion, model_completion


def _quiet(kind: Any, *names: str, help: str, **extra: Any) -> Any:
    """``Annotated[kind, typer.Option(*names, help=help, show_default=False)]``: a flag whose
    default typer does not print (it is vLLM's or the release's, or none; the help names it)."""
    return Annotated[kind, typer.Option(*names, help=help, show_default=False, **extra)]


ModelArg = Annotated[str, typer.Argument(
    help="Hub id (e.g. meta-llama/Llama-3.1-8B), a local config.json, or a model directory.",
    autocompletion=model_completion, show_default=False)]
GpuOpt = _quiet(
    str | None, "--gpu", autocompletion=gpu_completion,
    help="GPU id, alias, or the name nvidia-smi / torch print, e.g. h100, \"NVIDIA A100-SXM4-80GB\", "
    "\"RTX 4090\" (see `vmemplan gpus`); or give --gpu-total-memory.")
VersionOpt = _quiet(str | None, "--vllm-version",
                    help="vLLM release whose rules to apply, e.g. 0.10.1.1 [default: newest].")
RequestTokensOpt = _quiet(int | None, "--request-tokens",
                          help="Also report the KV bytes of one request of this many tokens.")
NoColorOpt = Annotated[bool, typer.Option("--no-color", help="No colour (also NO_COLOR=1).")]

# --- concurrency, sweep and gates -----------------------------------------------------------
MinConcurrencyOpt = _quiet(int | None, "--min-concurrency", min=1,
                           help="Gate: fail (exit 3) unless this many requests of --request-tokens run at once.")
MinKvTokensOpt = _quiet(int | None, "--min-kv-tokens", min=1,
                        help="Gate: fail (exit 3) unless the KV cache holds this many tokens.")


class GateOn(str, enum.Enum):
    central = "central"
    low = "low"


GateOnOpt = Annotated[GateOn, typer.Option(
    "--gate-on", help="Which end of the error band the gates (--min-concurrency, --min-kv-tokens) read: "
    "central (the estimate) or low (the band's low end; a plan that may not start then fails).")]
ReferenceTokensOpt = _quiet(
    int | None, "--request-tokens", min=1,
    help="Request length (prompt + output) the binding limit and the gates are read at "
    "[default: prompt + output, else max_model_len].")
LengthsOpt = _quiet(
    str | None, "--lengths",
    help="Request lengths to tabulate, e.g. 1000,4000,32768 [default: powers of two up to max_model_len].")
PromptTokensOpt = _quiet(
    str | None, "--prompt-tokens",
    help="Prompt tokens: a number, or with --simulate a distribution (500:3000, "
    "normal:MEAN:STD, lognormal:MEAN:SIGMA, exponential:MEAN).")
OutputTokensOpt = _quiet(str | None, "--output-tokens",
                         help="Output tokens: a number or (with --simulate) a distribution.")
ImagesOpt = _quiet(int | None, "--images-per-request", min=0, help="Images in every prompt (vision models).")
ImageSizeOpt = _quiet(str | None, "--image-size",
                      help="Image size WIDTHxHEIGHT [default: the largest the processor allows].")
VideosOpt = _quiet(int | None, "--videos-per-request", min=0,
                   help="Videos in every prompt (Qwen-VL style models).")
VideoFramesOpt = Annotated[int, typer.Option("--video-frames", min=1, help="Frames per video.")]
VideoSizeOpt = Annotated[str, typer.Option("--video-size", help="Frame size WIDTHxHEIGHT.")]
SimulateOpt = Annotated[bool, typer.Option("--simulate", help="Run the scheduler simulation over synthetic traffic.")]
#: The most requests ``--simulate`` takes: the simulator's work grows with the count.
MAX_SIM_REQUESTS = 100_000
RequestsOpt = Annotated[int, typer.Option("--requests", min=1, max=MAX_SIM_REQUESTS,
                                          help=f"Requests to simulate (at most {MAX_SIM_REQUESTS:,}).")]
ArrivalOpt = Annotated[str, typer.Option(
    "--arrival-rate", help="all-at-once, or requests per second: 2 (Poisson), poisson:2 or uniform:2; "
    "add /step for requests per scheduler step (poisson:0.05/step).")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Random seed of the simulated traffic.")]
VaryOpt = _quiet(list[str], "--vary",
                 help="FLAG=v1,v2,… or FLAG=start:stop:step (stop included); repeat for a grid.")
SolveOpt = Annotated[bool, typer.Option("--solve", help="Find the cheapest point meeting the target "
                                                        "(--min-concurrency/--request-tokens or --min-kv-tokens).")]
ChartOpt = _quiet(
    str | None, "--chart",
    help="Chart one output (kv_cache_tokens, max_concurrency, available_kv_cache_bytes, weights_bytes, "
    "num_blocks, concurrency_at_request_tokens) against a varied flag.")
ChartXOpt = _quiet(str | None, "--chart-x", help="The varied flag on the chart's axis [default: the first --vary].")
WhatIfOpt = _quiet(
    list[str] | None, "--what-if",
    help="FLAG=VALUE to re-plan the logged startup with (repeatable; all apply together), e.g."
    " gpu-memory-utilization=0.95, kv-cache-dtype=fp8, max-model-len=65536, tensor-parallel-size=2.")
OnlineOpt = Annotated[bool, typer.Option("--online", help="Allow fetching the model's config.json from the Hub.")]

# --- the engine flags every planning command takes ---------------------------------------------
#: vLLM's engine flags, in --help order, shared by `size`, `concurrency` and `sweep`: one list,
#: so the three commands always accept the same flags.
ENGINE_FLAGS: dict[str, Any] = {
    "gpu_memory_utilization": _quiet(float | None, "--gpu-memory-utilization", "--util", help="Fraction of the GPU vLLM may use [default: the release's]."),
    "max_model_len": _quiet(int | None, "--max-model-len", help="Longest request, prompt + output."),
    "max_num_seqs": _quiet(int | None, "--max-num-seqs", help="Most requests in flight."),
    "max_num_batched_tokens": _quiet(int | None, "--max-num-batched-tokens", help="Most tokens in one step."),
    "block_size": _quiet(int | None, "--block-size", help="Tokens per KV block."),
    "kv_cache_dtype": _quiet(str | None, "--kv-cache-dtype", help="auto, fp8, fp8_e4m3, fp8_e5m2, …"),
    "dtype": _quiet(str | None, "--dtype", help="auto, bfloat16, float16, float32."),
    "quantization": _quiet(str | None, "--quantization", "-q", help="Online quantization, e.g. fp8 (a checkpoint's own scheme is read from its config)."),
    "tensor_parallel_size": _quiet(int | None, "--tensor-parallel-size", "-tp", help="Tensor-parallel ranks."),
    "pipeline_parallel_size": _quiet(int | None, "--pipeline-parallel-size", "-pp", help="Pipeline stages."),
    "data_parallel_size": _quiet(int | None, "--data-parallel-size", "-dp", help="Data-parallel replicas."),
    "enable_expert_parallel": _quiet(bool | None, "--enable-expert-parallel/--no-enable-expert-parallel", help="Whole experts per rank instead of a slice of every expert."),
    "enable_eplb": _quiet(bool | None, "--enable-eplb/--no-enable-eplb", help="Expert-parallel load balancing."),
    "num_redundant_experts": _quiet(int | None, "--num-redundant-experts", help="Redundant expert copies for EPLB."),
    "decode_context_parallel_size": _quiet(int | None, "--decode-context-parallel-size", "-dcp", help="Decode context parallelism: KV tokens sharded across this group."),
    "enforce_eager": _quiet(bool | None, "--enforce-eager/--no-enforce-eager", help="No CUDA graphs."),
    "disable_sliding_window": _quiet(bool | None, "--disable-sliding-window", help="Ignore the config's sliding window (full attention; context capped to it)."),
    "kv_cache_memory": _quiet(str | None, "--kv-cache-memory", "--kv-cache-memory-bytes", help="KV cache bytes (e.g. 32G, 34359738368): skips the budget, like vLLM's flag."),
    "enable_prefix_caching": _quiet(bool | None, "--enable-prefix-caching/--no-enable-prefix-caching", help="Prefix caching."),
    "speculative_config": _quiet(str | None, "--speculative-config", help='Speculative decoding as JSON like vLLM, e.g. \'{"method": "eagle3", "model": "ORG/HEAD", "num_speculative_tokens": 3}\' (eagle, eagle3, mtp, draft_model, ngram, ...).'),
    "limit_mm_per_prompt": _quiet(str | None, "--limit-mm-per-prompt", help='Items per prompt per modality, as JSON like vLLM: \'{"image": 2, "video": 0}\' (0 = text only: no vision tower, no encoder profile) [default: 999 each].'),
    "skip_mm_profiling": _quiet(bool | None, "--skip-mm-profiling", help="Leave the encoder and encoder cache out of the profile run (more KV cache)."),
    "mm_encoder_tp_mode": _quiet(str | None, "--mm-encoder-tp-mode", help="weights (shard the vision tower over TP) or data (full tower per rank) [default: weights]."),
    "sampler": _quiet(str | None, "--sampler", help="Top-k/top-p sampler the engine runs: flashinfer, native_sort or triton [default: the release's usual one]; it sets the sampler's share of the activation peak."),
    "runner": _quiet(str | None, "--runner", help="generate (default) or pooling, for embedding and scoring models (no sampler pass)."),
    "assume_family": _quiet(str | None, "--assume-family", help="Plan an architecture vmemplan has no family for with this planned architecture's model graph, e.g. DeepseekV3ForCausalLM (the error for an unknown architecture names the closest one); every figure it moves is then an estimate."),
    "revision": _quiet(str | None, "--revision", help="Hub revision (branch, tag or commit)."),
    "config_format": _quiet(str | None, "--config-format", help="auto (default), hf or mistral, as vLLM: a Mistral-format model (params.json beside consolidated*.safetensors, in a local directory or a bundled copy) is planned from params.json unless hf."),
    "vllm_version": VersionOpt,
    "gpu_total_memory": _quiet(str | None, "--gpu-total-memory", help="The GPU's total memory as CUDA reports it (e.g. 24G, 81559MiB): alone for a GPU not in the registry, or over a registry GPU's (WSL, MIG)."),
    "gpu_memory_in_use": _quiet(str | None, "--gpu-memory-in-use", help="Memory other processes already hold on the GPU (e.g. 6G): vLLM refuses to start when what is free is less than its budget."),
}


def with_engine_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command every flag of :data:`ENGINE_FLAGS` after its own parameters.

    The command declares its own parameters plus ``engine: dict``; typer sees one flat
    signature (through ``__signature__``), and the wrapper hands the engine flags over as that
    dict, unset ones as None.
    """
    own = [p for p in inspect.signature(command).parameters.values() if p.name != "engine"]
    hints = {p.name: p.annotation for p in own}
    try:
        hints.update(typing.get_type_hints(command, include_extras=True))
    except Exception:  # pragma: no cover - string annotations that do not resolve
        pass
    own = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in own]
    extra = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=ann)
             for name, ann in ENGINE_FLAGS.items()]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        engine = {name: kwargs.pop(name, None) for name in ENGINE_FLAGS}
        # vLLM's own flags (and a pasted `-- vllm serve ...`), parsed by vmemplan.cli._vllm_args
        from vmemplan.cli._vllm_context import current_vllm_command

        parsed = current_vllm_command()
        if parsed is not None:
            from vmemplan.request.engine import engine_flags

            engine.update(engine_flags(parsed))
        return command(**kwargs, engine=engine)

    params = own + extra
    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    del wrapper.__wrapped__  # typer must read the flat signature, not the command's
    return wrapper
