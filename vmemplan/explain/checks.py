"""Arithmetic cross-checks between the figures of one startup log.  Every check states its
arithmetic in ``detail`` and passes when the two sides agree within the log's rounding.

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

from vmemplan.explain.figtext import block_size_of as _bs
from vmemplan.explain.figtext import half_unit as _tol
from vmemplan.explain.figtext import is_hybrid as _hybrid
from vmemplan.explain.figtext import printed_text as _p
from vmemplan.explain.figtext import version_tuple as _version_tuple
from vmemplan.explain.report import Check
from vmemplan.explain.startup import GIB, Figures, Startup

__all__ = ["checks_for"]

_EPS = 1e-9


def _within_rounding(name: str, ok: bool, detail: str, rank: int | None) -> Check:
    """The check ``name``: ``detail`` (its arithmetic) closed by whether its two sides agree
    within the log's rounding."""
    return Check(name, ok, detail + (" - agrees within rounding" if ok else " - differs by more than rounding"), rank)


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
        detail = (f"total {_p(f, 'total_memory_bytes')} GiB x util {u} = {want / GIB:.4f} GiB; "
                  f"log says {_p(f, 'requested_memory_bytes')} GiB (newer vLLM rounds up: "
                  f"requested = ceil(total x util) bytes)")
        out.append(_within_rounding("budget_vs_util_total", abs(want - R) <= tol, detail, rank))
    kv = f.available_kv_cache_bytes
    if kv is None:
        return out
    # V0 0.6.4: KV = total*util - peak_torch - non_torch
    if f.peak_torch_bytes is not None and T is not None and u is not None and f.non_torch_bytes is not None:
        calc = T * u - f.peak_torch_bytes - f.non_torch_bytes
        tol = (u * _tol(f, "total_memory_bytes") + _tol(f, "peak_torch_bytes") + _tol(f, "non_torch_bytes")
               + _tol(f, "available_kv_cache_bytes") + 1)
        detail = (f"total {_p(f, 'total_memory_bytes')} x util {u} - peak_torch {_p(f, 'peak_torch_bytes')}"
                  f" - non_torch {_p(f, 'non_torch_bytes')} = {calc / GIB:.3f} GiB; log says kv_cache_size"
                  f" {_p(f, 'available_kv_cache_bytes')} GiB")
        out.append(_within_rounding("kv_vs_budget_breakdown", abs(calc - kv) <= tol, detail, rank))
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
        elif _hybrid(s) or (s.figures.max_concurrency is not None and _version_tuple(s.vllm_version) is not None
                            and _version_tuple(s.vllm_version) >= (0, 21)):
            detail += (" - differs: for hybrid / sliding-window models vLLM >= 0.21 prints tokens as"
                       " concurrency x max_model_len, not bytes / bytes-per-token")
        else:
            detail += (" - differs: the bytes per token given do not match this log (check the KV dtype,"
                       " the heads per rank under TP, and layers without attention)")
        return [Check("tokens_vs_available_bytes", ok, detail, rank)]
    if f.num_gpu_blocks is not None:
        detail = f"{head}; log says {f.num_gpu_blocks:,} blocks"
        return [_within_rounding("blocks_vs_available_bytes", lo_blocks <= f.num_gpu_blocks <= hi_blocks, detail, rank)]
    return []


#: fp32 scalars an attention layer may hold beyond the weights law's four scale buffers, one
#: 512-byte allocator block each (see :func:`_check_weights`)
SCALAR_SLACK_PER_LAYER = 3 * 512


def _check_weights(f: Figures, expected: int, rank: int | None, slack: int = 0) -> list[Check]:
    """The logged weights against the law's, within the printed decimals; ``slack`` more bytes may
    be scalar fp32 tensors an attention layer holds on the device beyond the four scale buffers
    the weights law counts: the q/k/v range constants of older releases (``Attention.__init__``:
    ``self.q_range = torch.tensor(envs.Q_SCALE_CONSTANT)``, k, v) or 0.33's ``_k_scale_cpu`` /
    ``_v_scale_cpu`` (vllm/model_executor/layers/attention/attention.py::set_default_quant_scales),
    made under the loader's device context, each one 512-byte allocator block.  Which a release
    has is not tabulated yet, so up to three a layer are allowed (SCALAR_SLACK_PER_LAYER)."""
    if f.weights_bytes is None:
        return []
    tol = _tol(f, "weights_bytes")
    diff = f.weights_bytes - expected
    ok = -(tol + 1) <= diff <= tol + 1 + slack
    detail = (f"log says {_p(f, 'weights_bytes')} GiB; expected {expected / GIB:.4f} GiB; difference "
              f"{diff / GIB:+.4f} GiB ({(diff / expected * 100) if expected else 0:+.2f}%)")
    detail += " - agrees within the printed decimals" if ok else (
        " - differs by more than rounding (vLLM measures the memory the loader really allocated:"
        " padding, tied or extra tensors such as a vision tower, or a different quantization change it)")
    return [Check("weights_vs_model", ok, detail, rank)]


def checks_for(s: Startup, f: Figures, rank: int | None, bpt: int | None, weights: int | None,
               weights_slack: int = 0) -> list[Check]:
    out: list[Check] = []
    out += _check_concurrency(s, f, rank)
    out += _check_blocks_tokens(s, f, rank)
    out += _check_budget(s, f, rank)
    if bpt is not None:
        out += _check_bytes_per_token(s, f, bpt, rank)
    if weights is not None:
        out += _check_weights(f, weights, rank, weights_slack)
    return out

