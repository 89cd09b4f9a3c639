"""Explain a parsed vLLM startup: plain-words notes per line, arithmetic cross-checks, advice.

Pure: a :class:`~vmemplan.explain.parse.Startup` in, a frozen :class:`Report` out.  Every check
states its arithmetic in ``detail`` and passes when the two sides agree "within the log's
rounding": each printed figure may be off by half a unit of its last printed decimal.

The laws the checks mirror (vLLM source, read in the release wheels):

* V1 concurrency -- ``num_blocks / cdiv(per-request bytes, page bytes)`` summed over KV-cache groups
  (v1/core/kv_cache_utils.py::get_max_concurrency_for_kv_cache_config, 0.10 .. 0.33.0); for one
  full-attention group that is ``(tokens / block_size) / cdiv(max_model_len, block_size)``.  0.8.x
  printed ``tokens / max_model_len``; from 0.21.0 the token count itself is
  ``int(concurrency * max_model_len)`` (kv_cache_utils.py::get_kv_cache_capacity).
* V0 concurrency -- ``num_gpu_blocks * block_size / max_model_len``
  (executor/executor_base.py::initialize_cache, gpu_executor.py in 0.6.x).
* V1 pool in tokens -- ``available // (page bytes per block, all layers) * block_size``
  (kv_cache_utils.py::get_kv_cache_config_from_groups).
* Budget -- ``requested = ceil(total * util)`` (v1/worker/utils.py::request_memory, 0.33.0;
  ``total * util`` in older releases); V0 (0.6.5 .. removal) ``KV = total*util - weights -
  non_torch - activation`` (worker/worker.py::determine_num_available_blocks); 0.6.4 ``KV =
  total*util - peak_torch - non_torch`` where peak_torch includes the weights; V1 0.10.2+
  ``KV = requested - weights - activation - non_torch`` (minus the CUDA-graph estimate when CUDA
  graph memory profiling is on, v1/worker/gpu_worker.py::determine_available_memory).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vmemplan.core.version import version_tuple_or_none
from vmemplan.explain.parse import FIGURE_JSON_KEYS, GIB, Figures, LogLine, Startup, half_unit_bytes

__all__ = [
    "Check",
    "ExplainedLine",
    "Report",
    "Suggestion",
    "explain",
    "render_text",
    "report_to_json",
]

SCHEMA_VERSION = 1
DEFAULT_BLOCK_SIZE = 16
_EPS = 1e-9


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One cross-check between figures of the log; ``detail`` shows the arithmetic."""

    name: str
    ok: bool
    detail: str
    rank: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "ok": self.ok, "detail": self.detail}
        if self.rank is not None:
            out["rank"] = self.rank
        return out


@dataclass(frozen=True)
class Suggestion:
    """Something the user should act on (``severity`` "warning") or know ("info")."""

    name: str
    detail: str
    severity: str = "warning"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "severity": self.severity, "detail": self.detail}


@dataclass(frozen=True)
class ExplainedLine:
    number: int
    text: str
    kind: str
    rank: int | None
    explanation: str

    def to_json(self) -> dict[str, Any]:
        return {"number": self.number, "text": self.text, "explanation": self.explanation,
                "kind": self.kind, "rank": self.rank}


@dataclass(frozen=True)
class Report:
    startup: Startup
    lines: tuple[ExplainedLine, ...]
    checks: tuple[Check, ...]
    suggestions: tuple[Suggestion, ...]
    what_if: tuple[Mapping[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The ``startups[i]`` entry of the JSON contract (schema_version 1)."""
        s = self.startup
        out: dict[str, Any] = {
            "vllm_version": s.vllm_version,
            "format": s.format,
            "model": s.model,
            "outcome": s.outcome,
            "error": s.error,
            "ranks": list(s.ranks),
            "figures": _figures_json(s.figures),
            "checks": [c.to_json() for c in self.checks],
            "lines": [ln.to_json() for ln in self.lines],
            "what_if": [dict(w) for w in self.what_if],
        }
        if len(s.ranks) > 1:
            out["per_rank"] = {str(r): _figures_json(f) for r, f in s.per_rank.items()}
        out["suggestions"] = [x.to_json() for x in self.suggestions]
        out["preemptions"] = s.preemptions
        out["errors"] = list(s.errors)
        out["notes"] = list(s.notes)
        out["reached"] = s.reached
        out["first_line"] = s.first_line
        out["last_line"] = s.last_line
        out["printed"] = dict(s.figures.printed)
        out["stats"] = _json_safe(dict(s.stats))
        out["engine"] = _json_safe(dict(s.engine))
        return out


def _figures_json(f: Figures) -> dict[str, Any]:
    d = f.to_dict()
    out = {k: d[k] for k in FIGURE_JSON_KEYS}
    for k, v in d.items():
        if k not in out:
            out[k] = v
    return out


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json_safe(v) for v in value]
    return str(value)


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def _g(n: int | float | None) -> str:
    """Bytes as a GiB string with 2 decimals."""
    if n is None:
        return "?"
    return f"{n / GIB:.2f}"


def _p(f: Figures, name: str) -> str:
    """The figure as the log printed it (GiB text), else 2 decimals."""
    text = f.printed.get(name)
    if text is not None:
        return text
    return _g(getattr(f, name))


def _tol(f: Figures, name: str) -> int:
    return half_unit_bytes(f.printed.get(name))


def _hybrid(s: Startup) -> bool:
    return "hybrid" in s.notes or "padding_layers" in s.notes


def _bs(f: Figures) -> tuple[int, bool]:
    """Block size and whether it was printed (else vLLM's default 16 is assumed)."""
    if f.block_size:
        return f.block_size, True
    return DEFAULT_BLOCK_SIZE, False


# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------


def _check_concurrency(s: Startup, f: Figures, rank: int | None) -> list[Check]:
    out: list[Check] = []
    c, L = f.max_concurrency, f.max_model_len
    if c is None or not L:
        return out
    tol_c = 0.5 * 10 ** -len((f.printed.get("max_concurrency") or "0.00").split(".")[-1]) + _EPS
    bs, bs_known = _bs(f)
    bs_note = "" if bs_known else f" (block size {bs}, vLLM's default, assumed)"
    if f.kv_cache_tokens is not None:
        T = f.kv_cache_tokens
        a = T / L
        # tokens / L (0.8.x, and >= 0.21.0 where tokens = int(concurrency * L), so c in [T/L, (T+1)/L))
        ok_a = a - tol_c <= c <= (T + 1) / L + tol_c
        detail = f"{T:,} tokens / {L:,} max_model_len = {a:.4f}; printed {c:.2f}x"
        ok_b = False
        if T % bs == 0:
            blocks_per_req = -(-L // bs)
            b = (T // bs) / blocks_per_req
            ok_b = abs(b - c) <= tol_c
            if not ok_a or L % bs:
                detail += (f"; whole blocks: ({T:,} / {bs}) blocks / ceil({L:,} / {bs}) = "
                           f"{T // bs:,} / {blocks_per_req:,} = {b:.4f}{bs_note}")
        ok = ok_a or ok_b
        if ok:
            detail += " - agrees within the printed 2 decimals"
            if ok_b and not ok_a:
                detail += " when counted in whole blocks per request (vLLM >= 0.10 counts blocks)"
        else:
            why = (" This model mixes KV-cache layer kinds (sliding-window / linear-attention / mamba"
                   " groups): a max-length request needs fewer blocks than max_model_len / block_size"
                   " in some groups, and before 0.21.0 vLLM printed the token count as blocks /"
                   " number of groups x block size, so tokens / max_model_len understates concurrency.")
            if not _hybrid(s):
                why = (" The usual cause is a model with sliding-window or linear-attention layers"
                       " (e.g. gpt-oss, Gemma, Qwen3-Next): vLLM counts the blocks one max-length"
                       " request really needs per KV-cache group, which is fewer than"
                       " max_model_len / block_size, while before 0.21.0 the token line divided the"
                       " blocks by the number of groups.")
            detail += " - differs by more than rounding." + why
        out.append(Check("concurrency_vs_tokens", ok, detail, rank))
    elif f.num_gpu_blocks is not None:
        tokens = f.num_gpu_blocks * bs
        a = tokens / L
        ok = abs(a - c) <= tol_c
        detail = (f"{f.num_gpu_blocks:,} blocks x {bs} tokens{bs_note} / {L:,} max_model_len = {a:.4f};"
                  f" printed {c:.2f}x")
        detail += " - agrees within the printed 2 decimals" if ok else (
            " - differs by more than rounding (a block size other than the one assumed, or pipeline"
            " parallel stages splitting the blocks, would explain it)")
        out.append(Check("concurrency_vs_blocks", ok, detail, rank))
    return out


def _check_blocks_tokens(s: Startup, f: Figures, rank: int | None) -> list[Check]:
    if f.num_gpu_blocks is None or f.kv_cache_tokens is None:
        return []
    bs, bs_known = _bs(f)
    tokens_all = [pf.kv_cache_tokens for pf in s.per_rank.values() if pf.kv_cache_tokens is not None]
    T = f.kv_cache_tokens
    expect = f.num_gpu_blocks * bs
    note = "" if bs_known else f" (block size {bs}, vLLM's default, assumed)"
    detail = f"{f.num_gpu_blocks:,} blocks x {bs}{note} = {expect:,} tokens; log says {T:,} tokens"
    ok = expect == T
    if not ok and tokens_all and expect == min(tokens_all) and rank is None:
        ok = True
        detail += (f"; the engine keeps the smallest pool of all ranks ({min(tokens_all):,} tokens),"
                   " which matches")
    elif not ok and rank is not None and tokens_all and expect == min(tokens_all):
        ok = True
        detail += f"; the engine uses the smallest rank's pool ({min(tokens_all):,} tokens), which matches"
    if ok:
        detail += " - holds exactly"
    else:
        if _hybrid(s):
            detail += (" - differs: with several KV-cache groups vLLM prints blocks / groups x the"
                       " smallest block size, not blocks x block size")
        elif not bs_known:
            detail += " - differs: the block size is probably not 16 (it is not printed in this log)"
        else:
            detail += " - differs by more than rounding"
    return [Check("blocks_vs_tokens", ok, detail, rank)]


def _check_budget(s: Startup, f: Figures, rank: int | None) -> list[Check]:
    out: list[Check] = []
    T, u, R = f.total_memory_bytes, f.gpu_memory_utilization, f.requested_memory_bytes
    if T is not None and u is not None and R is not None:
        want = T * u
        tol = u * _tol(f, "total_memory_bytes") + _tol(f, "requested_memory_bytes") + 1
        ok = abs(want - R) <= tol
        detail = (f"total {_p(f, 'total_memory_bytes')} GiB x util {u} = {want / GIB:.4f} GiB; "
                  f"log says {_p(f, 'requested_memory_bytes')} GiB (newer vLLM rounds up: "
                  f"requested = ceil(total x util) bytes)")
        detail += " - agrees within rounding" if ok else " - differs by more than rounding"
        out.append(Check("budget_vs_util_total", ok, detail, rank))
    kv = f.available_kv_cache_bytes
    if kv is None:
        return out
    # V0 0.6.4: KV = total*util - peak_torch - non_torch
    if f.peak_torch_bytes is not None and T is not None and u is not None and f.non_torch_bytes is not None:
        calc = T * u - f.peak_torch_bytes - f.non_torch_bytes
        tol = (u * _tol(f, "total_memory_bytes") + _tol(f, "peak_torch_bytes") + _tol(f, "non_torch_bytes")
               + _tol(f, "available_kv_cache_bytes") + 1)
        ok = abs(calc - kv) <= tol
        detail = (f"total {_p(f, 'total_memory_bytes')} x util {u} - peak_torch {_p(f, 'peak_torch_bytes')}"
                  f" - non_torch {_p(f, 'non_torch_bytes')} = {calc / GIB:.3f} GiB; log says kv_cache_size"
                  f" {_p(f, 'available_kv_cache_bytes')} GiB")
        detail += " - agrees within rounding" if ok else " - differs by more than rounding"
        out.append(Check("kv_vs_budget_breakdown", ok, detail, rank))
        return out
    parts: list[tuple[str, int, str]] = []
    if f.consumed_bytes is not None:
        parts.append(("consumed (weights + non-torch)", f.consumed_bytes, "consumed_bytes"))
    else:
        if f.weights_bytes is not None:
            parts.append(("weights", f.weights_bytes, "weights_bytes"))
        if f.non_torch_bytes is not None:
            parts.append(("non-torch", f.non_torch_bytes, "non_torch_bytes"))
    if f.activation_peak_bytes is not None:
        parts.append(("activation peak", f.activation_peak_bytes, "activation_peak_bytes"))
    have_breakdown = f.activation_peak_bytes is not None and (
        f.consumed_bytes is not None or f.non_torch_bytes is not None)
    if not have_breakdown:
        return out
    if R is not None:
        base, base_txt, base_tol = R, f"requested {_p(f, 'requested_memory_bytes')}", _tol(f, "requested_memory_bytes")
    elif T is not None and u is not None:
        base, base_txt, base_tol = math.ceil(T * u), f"total {_p(f, 'total_memory_bytes')} x util {u}", int(
            u * _tol(f, "total_memory_bytes"))
    else:
        return out
    calc = base - sum(v for _, v, _ in parts)
    tol = base_tol + sum(_tol(f, n) for _, _, n in parts) + _tol(f, "available_kv_cache_bytes") + 1
    expr = f"{base_txt} - " + " - ".join(f"{label} {_p(f, n)}" for label, _, n in parts)
    ok = abs(calc - kv) <= tol
    detail = f"{expr} = {calc / GIB:.3f} GiB; log says {_p(f, 'available_kv_cache_bytes')} GiB for the KV cache"
    if not ok and f.cuda_graph_estimate_bytes is not None:
        calc2 = calc - f.cuda_graph_estimate_bytes
        tol2 = tol + _tol(f, "cuda_graph_estimate_bytes")
        if abs(calc2 - kv) <= tol2:
            ok = True
            detail = (f"{expr} - CUDA graph estimate {_p(f, 'cuda_graph_estimate_bytes')} = {calc2 / GIB:.3f} GiB;"
                      f" log says {_p(f, 'available_kv_cache_bytes')} GiB (CUDA graph memory profiling is on,"
                      " so the estimate is taken from the budget)")
    if ok:
        detail += " - agrees within rounding"
    else:
        detail += (" - differs by more than rounding (memory held by other processes or freed between"
                   " the measurement and this line would explain it)")
    out.append(Check("kv_vs_budget_breakdown", ok, detail, rank))
    return out


def _check_bytes_per_token(s: Startup, f: Figures, bpt: int, rank: int | None) -> list[Check]:
    kv = f.available_kv_cache_bytes
    if kv is None or bpt <= 0:
        return []
    bs, bs_known = _bs(f)
    e = _tol(f, "available_kv_cache_bytes")
    per_block = bpt * bs
    lo_blocks = max(0, (kv - e) // per_block)
    hi_blocks = max(0, (kv + e) // per_block)
    note = "" if bs_known else f", block size {bs} assumed"
    head = (f"{_p(f, 'available_kv_cache_bytes')} GiB / ({bpt:,} bytes per token x {bs} tokens per block"
            f"{note}) = {lo_blocks:,}..{hi_blocks:,} whole blocks")
    if f.kv_cache_tokens is not None:
        T = f.kv_cache_tokens
        ok = lo_blocks * bs <= T <= hi_blocks * bs
        detail = f"{head} = {lo_blocks * bs:,}..{hi_blocks * bs:,} tokens; log says {T:,} tokens"
        if ok:
            detail += " - agrees within the rounding of the printed GiB"
        elif _hybrid(s) or (s.figures.max_concurrency is not None and version_tuple_or_none(s.vllm_version) is not None
                            and version_tuple_or_none(s.vllm_version) >= (0, 21)):
            detail += (" - differs: for hybrid / sliding-window models vLLM >= 0.21 prints tokens as"
                       " concurrency x max_model_len, not bytes / bytes-per-token")
        else:
            detail += (" - differs: the bytes per token given do not match this log (check the KV dtype,"
                       " the heads per rank under TP, and layers without attention)")
        return [Check("tokens_vs_available_bytes", ok, detail, rank)]
    if f.num_gpu_blocks is not None:
        ok = lo_blocks <= f.num_gpu_blocks <= hi_blocks
        detail = f"{head}; log says {f.num_gpu_blocks:,} blocks"
        detail += " - agrees within rounding" if ok else " - differs by more than rounding"
        return [Check("blocks_vs_available_bytes", ok, detail, rank)]
    return []


def _check_weights(f: Figures, expected: int, rank: int | None) -> list[Check]:
    if f.weights_bytes is None:
        return []
    tol = _tol(f, "weights_bytes")
    diff = f.weights_bytes - expected
    ok = abs(diff) <= tol + 1
    detail = (f"log says {_p(f, 'weights_bytes')} GiB; expected {expected / GIB:.4f} GiB; difference "
              f"{diff / GIB:+.4f} GiB ({(diff / expected * 100) if expected else 0:+.2f}%)")
    detail += " - agrees within the printed decimals" if ok else (
        " - differs by more than rounding (vLLM measures the memory the loader really allocated:"
        " padding, tied or extra tensors such as a vision tower, or a different quantization change it)")
    return [Check("weights_vs_model", ok, detail, rank)]


def _checks_for(s: Startup, f: Figures, rank: int | None, bpt: int | None, weights: int | None) -> list[Check]:
    out: list[Check] = []
    out += _check_concurrency(s, f, rank)
    out += _check_blocks_tokens(s, f, rank)
    out += _check_budget(s, f, rank)
    if bpt is not None:
        out += _check_bytes_per_token(s, f, bpt, rank)
    if weights is not None:
        out += _check_weights(f, weights, rank)
    return out


# --------------------------------------------------------------------------------------------
# Suggestions
# --------------------------------------------------------------------------------------------


def _budget_bytes(f: Figures) -> int | None:
    if f.requested_memory_bytes is not None:
        return f.requested_memory_bytes
    if f.total_memory_bytes is not None and f.gpu_memory_utilization is not None:
        return math.ceil(f.total_memory_bytes * f.gpu_memory_utilization)
    return None


def _suggestions(s: Startup) -> list[Suggestion]:  # noqa: C901
    f = s.figures
    out: list[Suggestion] = []
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
    # negative available KV
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
    # pool smaller than one max-length request
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
    # CUDA graphs
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
    return out


# --------------------------------------------------------------------------------------------
# Line explanations
# --------------------------------------------------------------------------------------------


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


def _explain_line(s: Startup, ln: LogLine) -> str:  # noqa: C901
    f = s.per_rank.get(ln.rank, s.figures) if ln.rank is not None else s.figures
    k = ln.kind
    who = f" (rank {ln.rank})" if ln.rank is not None and len(s.ranks) > 1 else ""
    if k == "version":
        return ("The vLLM release that wrote this log. Log formats and the memory formulas changed between"
                " releases, so the checks below follow this version.")
    if k == "model":
        return "The model being served."
    if k == "args":
        keys = [x for x in ("max_model_len", "gpu_memory_utilization", "tensor_parallel_size",
                            "pipeline_parallel_size", "max_num_batched_tokens", "max_num_seqs", "kv_cache_dtype",
                            "dtype", "quantization", "enforce_eager", "kv_cache_memory_bytes", "block_size")]
        args = dict(s.engine.get("non_default_args", {}))
        args.update({kk: vv for kk, vv in s.engine.get("args", {}).items() if kk not in args})
        shown = ", ".join(f"{x}={args[x]!r}" for x in keys if x in args)
        return ("The flags you changed from vLLM's defaults. The ones that move memory: "
                + (shown or "none of the memory flags") + "; everything else is at its default.")
    if k == "engine_config":
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
    if k == "max_model_len":
        return (f"Each request may grow to {f.max_model_len:,} tokens (--max-model-len). The pool must hold at"
                " least one such request; halving this roughly doubles 'Maximum concurrency'.")
    if k == "chunked_prefill":
        return (f"At most {f.max_num_batched_tokens:,} tokens are processed per step"
                " (--max-num-batched-tokens). The startup profile run pushes a batch of this size through the"
                " model, so the activation peak, and with it the memory taken from the KV cache, grows with it.")
    if k == "block_size":
        return (f"The KV cache is handed out in blocks of {f.block_size} tokens. Hybrid (attention + mamba)"
                " models use large attention blocks so a block of each kind has the same byte size.")
    if k == "hybrid":
        return ("The model mixes KV-cache layer kinds (attention with mamba / linear attention / sliding"
                " window); page sizes are aligned or padded, which wastes a little of the pool and changes"
                " how tokens and concurrency are counted.")
    if k == "weights":
        label = ""
        if "GB" in ln.text and "GiB" not in ln.text:
            label = (" The 'GB' label is misleading: vLLM divides by 2^30 here, so the number is GiB.")
        return (f"The model weights take {_p(f, 'weights_bytes')} GiB on this GPU{who} (after splitting under"
                " tensor / pipeline parallelism). This is fixed: only a smaller dtype, quantization or more"
                " GPUs (--tensor-parallel-size / --pipeline-parallel-size) shrink it." + label)
    if k == "profiling":
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
    if k == "budget":
        return (f"vLLM may use total x util = {_p(f, 'total_memory_bytes')} GiB x {f.gpu_memory_utilization}"
                f" = {_p(f, 'requested_memory_bytes')} GiB on this GPU{who}; everything else is left to the CUDA"
                " context and other processes." + _util_step(f))
    if k == "profile_breakdown":
        return (f"How the budget was spent{who}: weights {_p(f, 'weights_bytes')} GiB, non-torch memory (NCCL,"
                f" CUDA workspaces) {_p(f, 'non_torch_bytes')} GiB, activation peak of the profile batch"
                f" {_p(f, 'activation_peak_bytes')} GiB; the rest, {_p(f, 'available_kv_cache_bytes')} GiB,"
                " becomes the KV cache. Lower --max-num-batched-tokens / --max-num-seqs to shrink the"
                " activation peak." + _util_step(f))
    if k == "available_kv":
        tail = ""
        if f.kv_cache_tokens and f.available_kv_cache_bytes and f.available_kv_cache_bytes > 0 and not _hybrid(s):
            per_gib = f.kv_cache_tokens / (f.available_kv_cache_bytes / GIB)
            tail = f" Here one GiB holds about {per_gib:,.0f} tokens."
        neg = ""
        if f.available_kv_cache_bytes is not None and f.available_kv_cache_bytes <= 0:
            neg = " It is not positive, so no KV cache block fits and vLLM refuses to start."
        return (f"What was left for the KV cache pool{who}: util x total minus weights, the profiled"
                " activation peak and non-torch memory (and, from vLLM 0.21, the CUDA graph estimate)."
                + neg + tail + _util_step(f))
    if k in ("kv_tokens", "kv_tokens_concurrency", "concurrency"):
        parts = []
        if k != "concurrency":
            parts.append("The pool size in tokens: the KV cache bytes divided by the bytes one token needs"
                         " across all layers on this GPU, rounded down to whole blocks.")
            if "Multiplying" in ln.text:
                parts = ["Decode/prefill context parallelism spreads one request's KV cache over several"
                         " GPUs, so the token count is multiplied by that factor."]
        if k != "kv_tokens":
            L = f.max_model_len
            parts.append(f"How many requests of the full {L:,} tokens fit in the pool at the same time"
                         if L else "How many full-length requests fit in the pool at once")
            parts[-1] += (". Shorter requests fit more; halving --max-model-len roughly doubles it, and"
                          " --max-num-seqs caps it from above.")
        return " ".join(parts)
    if k == "blocks":
        bs, known = _bs(f)
        n = f.num_gpu_blocks
        if n is None:
            return "The number of KV cache blocks."
        return (f"The pool in blocks: {n:,} blocks x {bs} tokens{'' if known else ' (default block size)'} ="
                f" {n * bs:,} tokens. CPU blocks, where printed, are swap space (--swap-space) and do not"
                " add GPU capacity.")
    if k == "cuda_graph":
        if f.cuda_graph_bytes is None:
            return "CUDA graphs were captured to make small decode batches fast."
        return (f"Capturing CUDA graphs took {_p(f, 'cuda_graph_bytes')} GiB{who}. Before vLLM 0.21 this happens"
                " after the KV pool is sized, so it comes out of the (1 - util) headroom; --enforce-eager skips"
                " it (slower decode) and fewer capture sizes shrink it. A negative number means memory was"
                " freed during the capture.")
    if k == "cuda_graph_estimate":
        return (f"vLLM measured a few graph captures before sizing the pool and estimates {_p(f, 'cuda_graph_estimate_bytes')}"
                " GiB for all CUDA graphs; with CUDA graph memory profiling on (default from 0.21) this is"
                " taken from the KV cache budget.")
    if k == "cuda_graph_profiling":
        return "How many CUDA graphs of each mode will be captured and the largest batch size captured."
    if k == "cuda_graph_util":
        if f.cuda_graph_equivalent_util is not None and f.gpu_memory_utilization is not None:
            return (f"Because the graph estimate now comes out of the budget, util {f.gpu_memory_utilization}"
                    f" gives the KV pool that util {f.cuda_graph_equivalent_util} gave before; use"
                    f" {f.cuda_graph_suggested_util} to keep the old pool size.")
        return "How CUDA graph memory is accounted in the budget, and the utilization that keeps the pool size."
    if k == "cuda_graph_pool":
        return "The real CUDA graph pool next to the estimate that was planned for; the difference was not budgeted."
    if k == "memory_summary":
        return ("vLLM's own breakdown after startup: free and total memory, the budget (util, GiB), and what"
                " weights, activation peak, non-torch memory and CUDA graphs used; the two --kv-cache-memory"
                " values would fix the pool size to fit the budget or the whole free GPU.")
    if k == "kv_override":
        return ("--kv-cache-memory-bytes fixed the KV pool size directly: the profiler's budget and"
                " --gpu-memory-utilization are ignored for the pool.")
    if k == "error":
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
    if k == "preemption":
        return ("Requests were preempted: the KV pool was full, so running requests were evicted and will be"
                " recomputed later. It costs throughput, not correctness.")
    return ""


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------


def explain(startup: Startup, *, bytes_per_token: int | None = None,
            model_weights_bytes: int | None = None) -> Report:
    """Explain one parsed startup.

    ``bytes_per_token`` (KV bytes one token needs on one rank, all layers) enables the
    tokens-vs-bytes check; ``model_weights_bytes`` (predicted weights per rank) the weights check.
    """
    s = startup
    checks = _checks_for(s, s.figures, None, bytes_per_token, model_weights_bytes)
    seen = [s.figures]
    for r in s.ranks:
        f = s.per_rank.get(r)
        if f is None or r == s.primary_rank:
            continue
        if all(_differs(f, g) for g in seen):  # ranks with identical figures are checked once
            seen.append(f)
            checks += _checks_for(s, f, r, bytes_per_token, model_weights_bytes)
    lines = tuple(ExplainedLine(ln.number, ln.text, ln.kind, ln.rank, _explain_line(s, ln)) for ln in s.lines)
    return Report(startup=s, lines=lines, checks=tuple(checks), suggestions=tuple(_suggestions(s)))


_CHECKED = ("total_memory_bytes", "gpu_memory_utilization", "weights_bytes", "activation_peak_bytes",
            "non_torch_bytes", "available_kv_cache_bytes", "kv_cache_tokens", "max_concurrency",
            "requested_memory_bytes", "peak_torch_bytes", "consumed_bytes")


def _differs(a: Figures, b: Figures) -> bool:
    return any(getattr(a, n) != getattr(b, n) for n in _CHECKED)


def report_to_json(reports: Iterable[Report]) -> dict[str, Any]:
    """The whole JSON document: ``{"schema_version": 1, "startups": [...]}``."""
    return {"schema_version": SCHEMA_VERSION, "startups": [r.to_json() for r in reports]}


def _short(text: str, width: int = 220) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def render_text(report: Report | Sequence[Report]) -> str:
    """Plain text: each recognised log line followed by its indented explanation, then the checks,
    then the suggestions.  Accepts one report or a list of them."""
    reports = [report] if isinstance(report, Report) else list(report)
    out: list[str] = []
    for i, rep in enumerate(reports, 1):
        s = rep.startup
        head = f"Startup {i} of {len(reports)}" if len(reports) > 1 else "Startup"
        out.append(f"{head}: vLLM {s.vllm_version or '(version not in log)'}, format {s.format},"
                   f" model {s.model or '(not in log)'}, ranks {', '.join(map(str, s.ranks))}: {s.outcome}")
        if s.error:
            out.append(f"  error: {s.error}")
        out.append("")
        for ln in rep.lines:
            out.append(f"  {ln.number:>6}: {_short(ln.text)}")
            if ln.explanation:
                out.append(f"          {ln.explanation}")
        out.append("")
        out.append("Checks:")
        if not rep.checks:
            out.append("  (none: the log lacks the figures a check needs)")
        for c in rep.checks:
            where = f" (rank {c.rank})" if c.rank is not None else ""
            out.append(f"  [{'ok' if c.ok else '!!'}] {c.name}{where}: {c.detail}")
        out.append("")
        out.append("Suggestions:")
        if not rep.suggestions:
            out.append("  (nothing to act on)")
        for sg in rep.suggestions:
            out.append(f"  [{sg.severity}] {sg.detail}")
        out.append("")
        for w in rep.what_if:
            out.extend(_render_what_if(w))
    return "\n".join(out).rstrip() + "\n"


def _render_what_if(w: Mapping[str, Any]) -> list[str]:
    """The what-if block of :func:`render_text`, from its JSON mapping (see vmemplan.explain.whatif)."""
    changes = ", ".join(f"{k}={v}" for k, v in dict(w.get("changes", {})).items()) or "(no changes)"
    out = [f"What if {changes}:"]
    for step in w.get("steps", ()):
        out.append(f"  - {step}")
    if w.get("reason"):
        out.append(f"  cannot say: {w['reason']}")
    kv = w.get("available_kv_cache_bytes")
    tokens, conc, starts = w.get("kv_cache_tokens"), w.get("max_concurrency"), w.get("starts")
    parts = [f"available KV cache {_g(kv)} GiB" if kv is not None else "available KV cache ?"]
    parts.append(f"{tokens:,} tokens" if tokens is not None else "tokens ?")
    if conc is not None:
        parts.append(f"max concurrency {conc:.2f}x")
    if starts is not None:
        parts.append("starts" if starts else "does NOT start")
    out.append("  => " + ", ".join(parts))
    out.append("  measured (from the log): " + (", ".join(w.get("measured", ())) or "none"))
    out.append("  estimated: " + (", ".join(w.get("estimated", ())) or "none"))
    out.append("")
    return out
