"""Suggestions: what a user should act on (or know) after reading a startup log."""

from __future__ import annotations

import math

from vmemplan.explain.figtext import block_size_of as _bs
from vmemplan.explain.figtext import is_hybrid as _hybrid
from vmemplan.explain.figtext import printed_text as _p
from vmemplan.explain.report import Suggestion
from vmemplan.explain.startup import GIB, Figures, Startup

__all__ = ["suggestions"]


def _budget_bytes(f: Figures) -> int | None:
    if f.requested_memory_bytes is not None:
        return f.requested_memory_bytes
    if f.total_memory_bytes is not None and f.gpu_memory_utilization is not None:
        return math.ceil(f.total_memory_bytes * f.gpu_memory_utilization)
    return None


def _high_utilization(s: Startup, out: list[Suggestion]) -> None:
    """A --gpu-memory-utilization so high that the headroom cannot hold the CUDA context and graphs."""
    f = s.figures
    u, T = f.gpu_memory_utilization, f.total_memory_bytes
    if u is not None and u >= 0.95:
        if T is not None:
            head = (1 - u) * T
            if head < 4 * GIB:
                out.append(Suggestion("high_utilization", (
                    f"--gpu-memory-utilization {u} leaves only {head / GIB:.2f} GiB of {T / GIB:.2f} GiB outside"
                    " vLLM's budget for the CUDA context, other processes and (before 0.21) the CUDA graphs"
                    " captured after the pool is sized; an out-of-memory crash under load is likely. Lower it"
                    " to 0.90-0.92 or keep the GPU free of other processes.")))
        else:
            out.append(Suggestion("high_utilization", (
                f"--gpu-memory-utilization {u} leaves at most {(1 - u) * 100:.0f}% of the GPU outside vLLM's"
                " budget for the CUDA context, other processes and CUDA graphs; watch for out-of-memory"
                " crashes under load.")))


def _no_kv_memory(s: Startup, out: list[Suggestion]) -> None:
    """A rank whose available KV cache is not positive."""
    neg = [(r, pf) for r, pf in s.per_rank.items()
           if pf.available_kv_cache_bytes is not None and pf.available_kv_cache_bytes <= 0]
    if neg:
        r, pf = neg[0]
        out.append(Suggestion("no_kv_memory", (
            f"Rank {r}: weights, activation peak and non-torch memory already exceed the budget"
            f" (available KV cache {_p(pf, 'available_kv_cache_bytes')} GiB). Raise"
            " --gpu-memory-utilization, lower --max-num-batched-tokens / --max-num-seqs (they size the"
            " profiled activation peak), use a quantized checkpoint, or split the model with"
            " --tensor-parallel-size.")))


def _pool_too_small(s: Startup, out: list[Suggestion]) -> None:
    """A pool that cannot hold one request of max_model_len, and the largest length that fits."""
    f = s.figures
    neg = any(pf.available_kv_cache_bytes is not None and pf.available_kv_cache_bytes <= 0
              for pf in s.per_rank.values())
    L = f.max_model_len
    bs, _ = _bs(f)
    tokens = f.kv_cache_tokens
    if tokens is None and f.num_gpu_blocks is not None and (s.format.startswith("v0") or s.format == "v1-early"):
        tokens = f.num_gpu_blocks * bs
    small = False
    if L:
        if f.estimated_max_model_len is not None:
            small = True
        elif f.max_concurrency is not None:
            # concurrency counts what one max-length request really needs (hybrid models too)
            small = f.max_concurrency < 1
        elif tokens is not None and tokens < L:
            small = True
    if small and not neg:
        if f.estimated_max_model_len is not None:
            fit = f.estimated_max_model_len
            how = "vLLM's own estimate in the error message"
        elif tokens is not None and not _hybrid(s):
            fit = tokens // bs * bs
            how = f"the pool's {tokens:,} tokens rounded down to whole {bs}-token blocks"
        else:
            fit = None
            how = ""
        msg = (f"The KV cache pool cannot hold one request of max_model_len {L:,} tokens"
               + (f" (pool: {tokens:,} tokens)." if tokens is not None else "."))
        if fit:
            msg += f" The largest length that fits is about {fit:,} tokens ({how}): pass --max-model-len {fit}"
            msg += " or less, or raise --gpu-memory-utilization."
        else:
            msg += " Lower --max-model-len or raise --gpu-memory-utilization."
        out.append(Suggestion("pool_smaller_than_one_request", msg))


def _cuda_graphs(s: Startup, out: list[Suggestion]) -> None:
    """CUDA graphs that take a large share of the budget, or missed their estimate."""
    f = s.figures
    cg = f.cuda_graph_bytes
    if cg is not None and cg > 0:
        budget = _budget_bytes(f)
        if budget is None and f.weights_bytes is not None and f.available_kv_cache_bytes is not None:
            budget = f.weights_bytes + max(f.available_kv_cache_bytes, 0) + (f.activation_peak_bytes or 0) + (
                f.non_torch_bytes or 0)
        share = cg / budget if budget else None
        if cg > 2 * GIB or (share is not None and share > 0.05):
            share_txt = f" ({share * 100:.1f}% of the ~{budget / GIB:.2f} GiB budget)" if share is not None else ""
            out.append(Suggestion("large_cuda_graphs", (
                f"CUDA graph capture took {_p(f, 'cuda_graph_bytes')} GiB{share_txt}. Capturing fewer batch"
                " sizes (--max-cudagraph-capture-size or compilation_config cudagraph_capture_sizes),"
                " PIECEWISE-only graphs, or --enforce-eager (slower decode) frees most of it; before"
                " vLLM 0.21 this memory is not counted in the budget and comes out of the"
                " (1 - util) headroom.")))
    if cg is not None and cg < 0:
        out.append(Suggestion("negative_cuda_graph", (
            f"Graph capture reports {_p(f, 'cuda_graph_bytes')} GiB: free memory rose during capture"
            " (something was released), so the capture cost is effectively ~0 here."), severity="info"))
    if f.cuda_graph_bytes is not None and f.cuda_graph_estimate_bytes is not None:
        diff = f.cuda_graph_bytes - f.cuda_graph_estimate_bytes
        if abs(diff) > 0.25 * GIB:
            out.append(Suggestion("cuda_graph_estimate_off", (
                f"The CUDA graph estimate ({_p(f, 'cuda_graph_estimate_bytes')} GiB) missed the real capture"
                f" ({_p(f, 'cuda_graph_bytes')} GiB) by {diff / GIB:+.2f} GiB; the difference is memory the"
                " KV cache sizing did not plan for."), severity="info"))


def _serving_and_failures(s: Startup, out: list[Suggestion]) -> None:
    """Preemptions while serving; a GPU that was not free; an out-of-memory crash."""
    if s.preemptions > 0:
        out.append(Suggestion("preemptions", (
            f"{s.preemptions} preemption(s) seen: the KV cache pool ran out while serving and requests"
            " were evicted and recomputed. More pool (higher --gpu-memory-utilization, more GPUs via"
            " --tensor-parallel-size, fp8 --kv-cache-dtype) or fewer concurrent requests"
            " (--max-num-seqs) avoids it.")))
    if s.outcome == "failed" and s.error and "Free memory on device" in s.error:
        out.append(Suggestion("gpu_not_free", (
            "Another process holds GPU memory: the free memory at startup is below util x total."
            " Free the GPU or lower --gpu-memory-utilization to fit what is free.")))
    if s.outcome == "failed" and s.error and ("out of memory" in s.error or "OutOfMemory" in s.error):
        out.append(Suggestion("oom", (
            "The process ran out of GPU memory. Lower --gpu-memory-utilization if other processes share the"
            " GPU, lower --max-num-batched-tokens / --max-num-seqs, or use --enforce-eager if it failed"
            " during CUDA graph capture.")))


#: Every suggestion rule, in the order the suggestions are listed.
_RULES = (_high_utilization, _no_kv_memory, _pool_too_small, _cuda_graphs, _serving_and_failures)


def suggestions(s: Startup) -> list[Suggestion]:
    """What the user should act on (or know) after this startup, most pressing first."""
    out: list[Suggestion] = []
    for rule in _RULES:
        rule(s, out)
    return out
