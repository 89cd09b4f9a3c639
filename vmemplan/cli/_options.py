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

ModelArg = Annotated[str, typer.Argument(
    help="Hub id (e.g. meta-llama/Llama-3.1-8B), a local config.json, or a model directory.",
    autocompletion=model_completion, show_default=False)]
GpuOpt = Annotated[str | None, typer.Option(
    "--gpu", help="GPU id, alias, or the name nvidia-smi / torch print, e.g. h100, \"NVIDIA A100-SXM4-80GB\", "
    "\"RTX 4090\" (see `vmemplan gpus`); or give --gpu-total-memory.",
    autocompletion=gpu_completion, show_default=False)]
GpuTotalOpt = Annotated[str | None, typer.Option(
    "--gpu-total-memory", help="The GPU's total memory as CUDA reports it (e.g. 24G, 81559MiB): alone for a GPU "
    "not in the registry, or over a registry GPU's (WSL, MIG).", show_default=False)]
GpuInUseOpt = Annotated[str | None, typer.Option(
    "--gpu-memory-in-use", help="Memory other processes already hold on the GPU (e.g. 6G): vLLM refuses to start "
    "when what is free is less than its budget.", show_default=False)]
UtilOpt = Annotated[float | None, typer.Option(
    "--gpu-memory-utilization", "--util", help="Fraction of the GPU vLLM may use [default: the release's].",
    show_default=False)]
MaxModelLenOpt = Annotated[int | None, typer.Option("--max-model-len", help="Longest request, prompt + output.",
                                                       show_default=False)]
MaxNumSeqsOpt = Annotated[int | None, typer.Option("--max-num-seqs", help="Most requests in flight.",
                                                      show_default=False)]
MnbtOpt = Annotated[int | None, typer.Option("--max-num-batched-tokens", help="Most tokens in one step.",
                                                show_default=False)]
BlockSizeOpt = Annotated[int | None, typer.Option("--block-size", help="Tokens per KV block.", show_default=False)]
KvDtypeOpt = Annotated[str | None, typer.Option("--kv-cache-dtype", help="auto, fp8, fp8_e4m3, fp8_e5m2, …",
                                                   show_default=False)]
DtypeOpt = Annotated[str | None, typer.Option("--dtype", help="auto, bfloat16, float16, float32.",
                                                 show_default=False)]
TpOpt = Annotated[int | None, typer.Option("--tensor-parallel-size", "-tp", help="Tensor-parallel ranks.",
                                              show_default=False)]
PpOpt = Annotated[int | None, typer.Option("--pipeline-parallel-size", "-pp", help="Pipeline stages.",
                                              show_default=False)]
EagerOpt = Annotated[bool | None, typer.Option("--enforce-eager/--no-enforce-eager",
                                                  help="No CUDA graphs.", show_default=False)]
DisableSwOpt = Annotated[bool | None, typer.Option(
    "--disable-sliding-window", help="Ignore the config's sliding window (full attention; context capped to it).",
    show_default=False)]
KvMemOpt = Annotated[str | None, typer.Option(
    "--kv-cache-memory", "--kv-cache-memory-bytes",
    help="KV cache bytes (e.g. 32G, 34359738368): skips the budget, like vLLM's flag.", show_default=False)]
RevisionOpt = Annotated[str | None, typer.Option("--revision", help="Hub revision (branch, tag or commit).",
                                                    show_default=False)]
VersionOpt = Annotated[str | None, typer.Option(
    "--vllm-version", help="vLLM release whose rules to apply, e.g. 0.10.1.1 [default: newest].", show_default=False)]
PrefixOpt = Annotated[bool | None, typer.Option("--enable-prefix-caching/--no-enable-prefix-caching",
                                                   help="Prefix caching.", show_default=False)]
RequestTokensOpt = Annotated[int | None, typer.Option(
    "--request-tokens", help="Also report the KV bytes of one request of this many tokens.", show_default=False)]
NoColorOpt = Annotated[bool, typer.Option("--no-color", help="No colour (also NO_COLOR=1).")]

# --- concurrency, sweep and gates -----------------------------------------------------------
MinConcurrencyOpt = Annotated[int | None, typer.Option(
    "--min-concurrency", min=1, help="Gate: fail (exit 3) unless this many requests of --request-tokens run at once.",
    show_default=False)]
MinKvTokensOpt = Annotated[int | None, typer.Option(
    "--min-kv-tokens", min=1, help="Gate: fail (exit 3) unless the KV cache holds this many tokens.",
    show_default=False)]
class GateOn(str, enum.Enum):
    central = "central"
    low = "low"


GateOnOpt = Annotated[GateOn, typer.Option(
    "--gate-on", help="Which end of the error band the gates (--min-concurrency, --min-kv-tokens) read: "
    "central (the estimate) or low (the band's low end; a plan that may not start then fails).")]
ReferenceTokensOpt = Annotated[int | None, typer.Option(
    "--request-tokens", min=1, help="Request length (prompt + output) the binding limit and the gates are read at "
    "[default: prompt + output, else max_model_len].", show_default=False)]
LengthsOpt = Annotated[str | None, typer.Option(
    "--lengths", help="Request lengths to tabulate, e.g. 1000,4000,32768 [default: powers of two up to "
    "max_model_len].", show_default=False)]
PromptTokensOpt = Annotated[str | None, typer.Option(
    "--prompt-tokens", help="Prompt tokens: a number, or with --simulate a distribution (500:3000, "
    "normal:MEAN:STD, lognormal:MEAN:SIGMA, exponential:MEAN).", show_default=False)]
OutputTokensOpt = Annotated[str | None, typer.Option(
    "--output-tokens", help="Output tokens: a number or (with --simulate) a distribution.", show_default=False)]
ImagesOpt = Annotated[int | None, typer.Option(
    "--images-per-request", min=0, help="Images in every prompt (vision models).", show_default=False)]
ImageSizeOpt = Annotated[str | None, typer.Option(
    "--image-size", help="Image size WIDTHxHEIGHT [default: the largest the processor allows].", show_default=False)]
VideosOpt = Annotated[int | None, typer.Option(
    "--videos-per-request", min=0, help="Videos in every prompt (Qwen-VL style models).", show_default=False)]
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
VaryOpt = Annotated[list[str], typer.Option(
    "--vary", help="FLAG=v1,v2,… or FLAG=start:stop:step (stop included); repeat for a grid.", show_default=False)]
SolveOpt = Annotated[bool, typer.Option("--solve", help="Find the cheapest point meeting the target "
                                                        "(--min-concurrency/--request-tokens or --min-kv-tokens).")]
ChartOpt = Annotated[str | None, typer.Option(
    "--chart", help="Chart one output (kv_cache_tokens, max_concurrency, available_kv_cache_bytes, weights_bytes, "
    "num_blocks, concurrency_at_request_tokens) against a varied flag.", show_default=False)]
ChartXOpt = Annotated[str | None, typer.Option(
    "--chart-x", help="The varied flag on the chart's axis [default: the first --vary].", show_default=False)]
WhatIfOpt = Annotated[list[str] | None, typer.Option(
    "--what-if", help="FLAG=VALUE to re-plan the logged startup with (repeatable; all apply together), e.g."
    " gpu-memory-utilization=0.95, kv-cache-dtype=fp8, max-model-len=65536, tensor-parallel-size=2.",
    show_default=False)]
OnlineOpt = Annotated[bool, typer.Option("--online", help="Allow fetching the model's config.json from the Hub.")]

# --- multimodal and speculative decoding (vLLM's flags) -----------------------------------
LimitMmOpt = Annotated[str | None, typer.Option(
    "--limit-mm-per-prompt", help='Items per prompt per modality, as JSON like vLLM: \'{"image": 2, "video": 0}\' '
    "(0 = text only: no vision tower, no encoder profile) [default: 999 each].", show_default=False)]
SkipMmProfilingOpt = Annotated[bool | None, typer.Option(
    "--skip-mm-profiling", help="Leave the encoder and encoder cache out of the profile run (more KV cache).",
    show_default=False)]
MmEncoderTpModeOpt = Annotated[str | None, typer.Option(
    "--mm-encoder-tp-mode", help="weights (shard the vision tower over TP) or data (full tower per rank) "
    "[default: weights].", show_default=False)]
SpeculativeConfigOpt = Annotated[str | None, typer.Option(
    "--speculative-config", help='Speculative decoding as JSON like vLLM, e.g. \'{"method": "eagle3", "model": '
    '"ORG/HEAD", "num_speculative_tokens": 3}\' (eagle, eagle3, mtp, draft_model, ngram, ...).', show_default=False)]
QuantizationOpt = Annotated[str | None, typer.Option(
    "--quantization", "-q", help="Online quantization, e.g. fp8 (a checkpoint's own scheme is read from its config).",
    show_default=False)]
DpOpt = Annotated[int | None, typer.Option("--data-parallel-size", "-dp", help="Data-parallel replicas.",
                                              show_default=False)]
EpOpt = Annotated[bool | None, typer.Option("--enable-expert-parallel/--no-enable-expert-parallel",
                                               help="Whole experts per rank instead of a slice of every expert.",
                                               show_default=False)]
EplbOpt = Annotated[bool | None, typer.Option("--enable-eplb/--no-enable-eplb",
                                                 help="Expert-parallel load balancing.", show_default=False)]
RedundantOpt = Annotated[int | None, typer.Option("--num-redundant-experts",
                                                     help="Redundant expert copies for EPLB.", show_default=False)]
DcpOpt = Annotated[int | None, typer.Option("--decode-context-parallel-size", "-dcp",
                                               help="Decode context parallelism: KV tokens sharded across this group.",
                                               show_default=False)]
SamplerOpt = Annotated[str | None, typer.Option(
    "--sampler", help="Top-k/top-p sampler the engine runs: flashinfer, native_sort or triton "
    "[default: the release's usual one]; it sets the sampler's share of the activation peak.", show_default=False)]


RunnerOpt = Annotated[str | None, typer.Option(
    "--runner", help="generate (default) or pooling, for embedding and scoring models (no sampler pass).",
    show_default=False)]


AssumeFamilyOpt = Annotated[str | None, typer.Option(
    "--assume-family", help="Plan an architecture vmemplan has no family for with this planned architecture's "
    "model graph, e.g. DeepseekV3ForCausalLM (the error for an unknown architecture names the closest one); "
    "every figure it moves is then an estimate.", show_default=False)]


# --- the engine flags every planning command takes ---------------------------------------------
#: vLLM's engine flags, in --help order, shared by `size`, `concurrency` and `sweep`: one list,
#: so the three commands always accept the same flags.
ENGINE_FLAGS: dict[str, Any] = {
    "gpu_memory_utilization": UtilOpt,
    "max_model_len": MaxModelLenOpt,
    "max_num_seqs": MaxNumSeqsOpt,
    "max_num_batched_tokens": MnbtOpt,
    "block_size": BlockSizeOpt,
    "kv_cache_dtype": KvDtypeOpt,
    "dtype": DtypeOpt,
    "quantization": QuantizationOpt,
    "tensor_parallel_size": TpOpt,
    "pipeline_parallel_size": PpOpt,
    "data_parallel_size": DpOpt,
    "enable_expert_parallel": EpOpt,
    "enable_eplb": EplbOpt,
    "num_redundant_experts": RedundantOpt,
    "decode_context_parallel_size": DcpOpt,
    "enforce_eager": EagerOpt,
    "disable_sliding_window": DisableSwOpt,
    "kv_cache_memory": KvMemOpt,
    "enable_prefix_caching": PrefixOpt,
    "speculative_config": SpeculativeConfigOpt,
    "limit_mm_per_prompt": LimitMmOpt,
    "skip_mm_profiling": SkipMmProfilingOpt,
    "mm_encoder_tp_mode": MmEncoderTpModeOpt,
    "sampler": SamplerOpt,
    "runner": RunnerOpt,
    "assume_family": AssumeFamilyOpt,
    "revision": RevisionOpt,
    "vllm_version": VersionOpt,
    "gpu_total_memory": GpuTotalOpt,
    "gpu_memory_in_use": GpuInUseOpt,
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
