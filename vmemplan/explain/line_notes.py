"""Plain-words notes for each recognised log line, by line kind."""

from __future__ import annotations

from collections.abc import Callable

from vmemplan.explain.figtext import block_size_of as _bs
from vmemplan.explain.figtext import gib_text as _g
from vmemplan.explain.figtext import is_hybrid as _hybrid
from vmemplan.explain.figtext import printed_text as _p
from vmemplan.explain.startup import GIB, Figures, LogLine, Startup

__all__ = ["explain_line"]


def _util_step(f: Figures) -> str:
    if f.total_memory_bytes is None:
        return (" Raising --gpu-memory-utilization by 0.01 adds 0.01 x the GPU's total memory here"
                " (the total is not in this log).")
    step = 0.01 * f.total_memory_bytes
    extra = ""
    if f.kv_cache_tokens and f.available_kv_cache_bytes and f.available_kv_cache_bytes > 0:
        extra = f", about {int(step / f.available_kv_cache_bytes * f.kv_cache_tokens):,} more tokens"
    return (f" Raising --gpu-memory-utilization by 0.01 adds 0.01 x {_g(f.total_memory_bytes)} GiB ="
            f" {step / GIB:.2f} GiB here{extra}.")


def _note_model(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    return "The model being served."


def _note_args(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    keys = [x for x in ("max_model_len", "gpu_memory_utilization", "tensor_parallel_size",
                        "pipeline_parallel_size", "max_num_batched_tokens", "max_num_seqs", "kv_cache_dtype",
                        "dtype", "quantization", "enforce_eager", "kv_cache_memory_bytes", "block_size")]
    args = dict(s.engine.get("non_default_args", {}))
    args.update({kk: vv for kk, vv in s.engine.get("args", {}).items() if kk not in args})
    shown = ", ".join(f"{x}={args[x]!r}" for x in keys if x in args)
    return ("The flags you changed from vLLM's defaults. The ones that move memory: "
            + (shown or "none of the memory flags") + "; everything else is at its default.")


def _note_engine_config(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    bits = []
    if f.dtype:
        bits.append(f"dtype {f.dtype} (weights and KV cache elements use it unless quantized or"
                    " --kv-cache-dtype says otherwise)")
    if f.max_model_len:
        bits.append(f"max_seq_len {f.max_model_len:,} (= --max-model-len)")
    if f.tensor_parallel_size:
        bits.append(f"tensor_parallel_size {f.tensor_parallel_size} (weights and KV heads are split"
                    " across this many GPUs)")
    if f.kv_cache_dtype:
        bits.append(f"kv_cache_dtype {f.kv_cache_dtype}")
    if f.quantization:
        bits.append(f"quantization {f.quantization}")
    if f.enforce_eager is not None:
        bits.append("enforce_eager " + ("on: no CUDA graphs" if f.enforce_eager else "off: CUDA graphs"
                                         " will be captured"))
    return "The engine's resolved configuration: " + "; ".join(bits) + "."


def _note_weights(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    label = ""
    if "GB" in ln.text and "GiB" not in ln.text:
        label = (" The 'GB' label is misleading: vLLM divides by 2^30 here, so the number is GiB.")
    return (f"The model weights take {_p(f, 'weights_bytes')} GiB on this GPU{who} (after splitting under"
            " tensor / pipeline parallelism). This is fixed: only a smaller dtype, quantization or more"
            " GPUs (--tensor-parallel-size / --pipeline-parallel-size) shrink it." + label)


def _note_profiling(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    if f.peak_torch_bytes is not None:
        act = ""
        if f.weights_bytes is not None:
            act = (f" The activation spike alone is peak_torch - weights = {_p(f, 'peak_torch_bytes')} -"
                   f" {_p(f, 'weights_bytes')} = {(f.peak_torch_bytes - f.weights_bytes) / GIB:.2f} GiB.")
        return ("The profiler's summary (vLLM 0.6.4): peak_torch_memory is the highest PyTorch allocation"
                " during one dummy batch and includes the weights; the KV cache gets total x util -"
                " peak_torch - non_torch." + act + _util_step(f))
    if f.non_kv_cache_bytes is not None:
        return ("The profile run's summary: everything that is not KV cache (weights + activation peak +"
                f" non-torch memory) adds up to {_p(f, 'non_kv_cache_bytes')} GiB.")
    return ("The profile run: vLLM pushed one worst-case dummy batch through the model to measure the"
            " activation peak.")


#: What each row of the 0.6.5 development builds' "Memory profiling results:" block means.
_PROFILER_ROWS = (
    ("memory_usage_post_profile", "memory in use right after the profile run"),
    ("initial_memory_usage", "memory in use before the profile run (the weights included)"),
    ("peak_torch_memory", "the highest PyTorch allocation during the profile run, the weights included"),
    ("non_torch_memory", "memory outside PyTorch's allocator (CUDA context, NCCL buffers)"),
    ("total_gpu_memory", "the GPU's total memory"),
    ("kv_cache_size", "what is left for the KV cache: total x util - peak_torch - non_torch"),
    ("gpu_memory_utilization", "--gpu-memory-utilization, the share of the GPU vLLM may use"),
)


def _note_profiling_row(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    row = "_".join(ln.text.lower().replace("\t", " ").split())
    meaning = next((text for name, text in _PROFILER_ROWS if name in row), "a figure of the profile run")
    return f"One row of the profiler's summary block (vLLM 0.6.5 development builds){who}: {meaning}."


def _note_budget(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    return (f"vLLM may use total x util = {_p(f, 'total_memory_bytes')} GiB x {f.gpu_memory_utilization}"
            f" = {_p(f, 'requested_memory_bytes')} GiB on this GPU{who}; everything else is left to the CUDA"
            " context and other processes." + _util_step(f))


def _note_profile_breakdown(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    return (f"How the budget was spent{who}: weights {_p(f, 'weights_bytes')} GiB, non-torch memory (NCCL,"
            f" CUDA workspaces) {_p(f, 'non_torch_bytes')} GiB, activation peak of the profile batch"
            f" {_p(f, 'activation_peak_bytes')} GiB; the rest, {_p(f, 'available_kv_cache_bytes')} GiB,"
            " becomes the KV cache. Lower --max-num-batched-tokens / --max-num-seqs to shrink the"
            " activation peak." + _util_step(f))


def _note_available_kv(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    tail = ""
    if f.kv_cache_tokens and f.available_kv_cache_bytes and f.available_kv_cache_bytes > 0 and not _hybrid(s):
        per_gib = f.kv_cache_tokens / (f.available_kv_cache_bytes / GIB)
        tail = f" Here one GiB holds about {per_gib:,.0f} tokens."
    neg = ""
    if f.available_kv_cache_bytes is not None and f.available_kv_cache_bytes <= 0:
        neg = " It is not positive, so no KV cache block fits and vLLM refuses to start."
    return (f"What was left for the KV cache pool{who}: util x total minus weights, the profiled"
            " activation peak and non-torch memory (and, from vLLM 0.20, the CUDA graph estimate)."
            + neg + tail + _util_step(f))


def _note_kv_tokens(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    parts = []
    if ln.kind != "concurrency":
        parts.append("The pool size in tokens: the KV cache bytes divided by the bytes one token needs"
                     " across all layers on this GPU, rounded down to whole blocks.")
        if "Multiplying" in ln.text:
            parts = ["Decode/prefill context parallelism spreads one request's KV cache over several"
                     " GPUs, so the token count is multiplied by that factor."]
    if ln.kind != "kv_tokens":
        L = f.max_model_len
        parts.append(f"How many requests of the full {L:,} tokens fit in the pool at the same time"
                     if L else "How many full-length requests fit in the pool at once")
        parts[-1] += (". Shorter requests fit more; halving --max-model-len roughly doubles it, and"
                      " --max-num-seqs caps it from above.")
    return " ".join(parts)


def _note_blocks(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    bs, known = _bs(f)
    n = f.num_gpu_blocks
    if n is None:
        return "The number of KV cache blocks."
    return (f"The pool in blocks: {n:,} blocks x {bs} tokens{'' if known else ' (default block size)'} ="
            f" {n * bs:,} tokens. CPU blocks, where printed, are swap space (--swap-space) and do not"
            " add GPU capacity.")


def _note_cuda_graph(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    if f.cuda_graph_bytes is None:
        return "CUDA graphs were captured to make small decode batches fast."
    return (f"Capturing CUDA graphs took {_p(f, 'cuda_graph_bytes')} GiB{who}. Before vLLM 0.20 (0.18-0.19"
            " unless VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1) this happens after the KV pool is sized,"
            " so it comes out of the (1 - util) headroom; --enforce-eager skips it (slower decode) and"
            " fewer capture sizes shrink it. A negative number means memory was freed during the capture.")


def _note_cuda_graph_estimate(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    return (f"vLLM measured a few graph captures before sizing the pool and estimates {_p(f, 'cuda_graph_estimate_bytes')}"
            " GiB for all CUDA graphs; with CUDA graph memory profiling on (default from 0.20) this is"
            " taken from the KV cache budget.")


def _note_cuda_graph_util(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    if f.cuda_graph_equivalent_util is not None and f.gpu_memory_utilization is not None:
        return (f"Because the graph estimate now comes out of the budget, util {f.gpu_memory_utilization}"
                f" gives the KV pool that util {f.cuda_graph_equivalent_util} gave before; use"
                f" {f.cuda_graph_suggested_util} to keep the old pool size.")
    return "How CUDA graph memory is accounted in the budget, and the utilization that keeps the pool size."


def _note_error(s: Startup, f: Figures, ln: LogLine, who: str) -> str:
    t = ln.text
    if "To serve at least one request" in t:
        return ("vLLM refuses to start: the KV cache needed for one request of max_model_len exceeds the"
                " available KV cache memory. Lower --max-model-len (to the estimate, if printed) or raise"
                " --gpu-memory-utilization.")
    if "maximum number of tokens that can be" in t:
        return ("vLLM (V0) refuses to start: the pool holds fewer tokens than one max-length request. Lower"
                " --max-model-len to the printed capacity or raise --gpu-memory-utilization.")
    if "No available memory" in t:
        return "No memory was left for even one KV cache block after weights and the activation peak."
    if "Free memory on device" in t:
        return ("At startup the GPU had less free memory than util x total: another process is using it.")
    if "out of memory" in t or "OutOfMemory" in t:
        return "The GPU ran out of memory while allocating; see the suggestions below."
    return "The engine did not start; the reason is on the lines around this one."


#: Notes that are one text, filled in with the rank's figures (``str.format(f=figures)``).
_TEXT_NOTES: dict[str, str] = {
    "version": ("The vLLM release that wrote this log. Log formats and the memory formulas changed between"
        " releases, so the checks below follow this version."),
    "max_model_len": ("Each request may grow to {f.max_model_len:,} tokens (--max-model-len). The pool must hold at"
        " least one such request; halving this roughly doubles 'Maximum concurrency'."),
    "chunked_prefill": ("At most {f.max_num_batched_tokens:,} tokens are processed per step"
        " (--max-num-batched-tokens). The startup profile run pushes a batch of this size through the"
        " model, so the activation peak, and with it the memory taken from the KV cache, grows with it."),
    "block_size": ("The KV cache is handed out in blocks of {f.block_size} tokens. Hybrid (attention + mamba)"
        " models use large attention blocks so a block of each kind has the same byte size."),
    "hybrid": ("The model mixes KV-cache layer kinds (attention with mamba / linear attention / sliding"
        " window); page sizes are aligned or padded, which wastes a little of the pool and changes"
        " how tokens and concurrency are counted."),
    "cuda_graph_profiling": "How many CUDA graphs of each mode will be captured and the largest batch size captured.",
    "cuda_graph_pool": "The real CUDA graph pool next to the estimate that was planned for; the difference was not budgeted.",
    "memory_summary": ("vLLM's own breakdown after startup: free and total memory, the budget (util, GiB), and what"
        " weights, activation peak, non-torch memory and CUDA graphs used; the two --kv-cache-memory"
        " values would fix the pool size to fit the budget or the whole free GPU."),
    "kv_override": ("--kv-cache-memory-bytes fixed the KV pool size directly: the profiler's budget and"
        " --gpu-memory-utilization are ignored for the pool."),
    "preemption": ("Requests were preempted: the KV pool was full, so running requests were evicted and will be"
        " recomputed later. It costs throughput, not correctness."),
}


def _text_note(template: str) -> Callable[[Startup, Figures, LogLine, str], str]:
    return lambda s, f, ln, who: template.format(f=f)


#: Line kind -> its note (kinds come from the rules in :mod:`vmemplan.explain.line_rules`).
_NOTES: dict[str, Callable[[Startup, Figures, LogLine, str], str]] = {
    "model": _note_model,
    "args": _note_args,
    "engine_config": _note_engine_config,
    "weights": _note_weights,
    "profiling": _note_profiling,
    "profiling_row": _note_profiling_row,
    "budget": _note_budget,
    "profile_breakdown": _note_profile_breakdown,
    "available_kv": _note_available_kv,
    "kv_tokens": _note_kv_tokens,
    "kv_tokens_concurrency": _note_kv_tokens,
    "concurrency": _note_kv_tokens,
    "blocks": _note_blocks,
    "cuda_graph": _note_cuda_graph,
    "cuda_graph_estimate": _note_cuda_graph_estimate,
    "cuda_graph_util": _note_cuda_graph_util,
    "error": _note_error,
    **{kind: _text_note(text) for kind, text in _TEXT_NOTES.items()},
}


def explain_line(s: Startup, ln: LogLine) -> str:
    """The plain-words note for one recognised line (figures of the rank that printed it)."""
    f = s.per_rank.get(ln.rank, s.figures) if ln.rank is not None else s.figures
    who = f" (rank {ln.rank})" if ln.rank is not None and len(s.ranks) > 1 else ""
    note = _NOTES.get(ln.kind)
    return note(s, f, ln, who) if note is not None else ""
