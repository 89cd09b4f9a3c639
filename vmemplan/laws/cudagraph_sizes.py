"""``--cudagraph-capture-sizes`` and ``--max-cudagraph-capture-size``: which batch sizes vLLM
captures CUDA graphs for when the user chooses them.

Mirrors vllm/config/vllm.py::VllmConfig._set_cudagraph_sizes and
vllm/engine/arg_utils.py::EngineArgs.create_engine_config (0.33.0), for a model without
speculative decoding (whose sizes vLLM then rounds to the decode query length, not modelled):

* given sizes: de-duplicated, those above ``max_num_batched_tokens`` dropped, sorted; a given
  maximum must equal the largest kept size, else vLLM raises;
* a given maximum alone: ``min(max, max_num_batched_tokens)`` is the ceiling of the default
  ladder (1, 2, 4, multiples of 8 below 256, multiples of 16 from 256), plus
  ``max_num_batched_tokens`` when it fits; the default's uniform-decode size is not added
  (vLLM adds it only when it computes the maximum itself).

The default list (neither flag) stays :meth:`vmemplan.rules_sections.CudaGraphRules.capture_sizes`.
"""

from __future__ import annotations

from collections.abc import Sequence

from vmemplan.core.errors import UsageError

__all__ = ["user_capture_sizes"]


def user_capture_sizes(*, sizes: Sequence[int] | None, max_size: int | None,
                       max_num_batched_tokens: int) -> tuple[list[int], list[str]]:
    """The capture sizes vLLM 0.33.0 keeps, and what it logs about them (warnings)."""
    notes: list[str] = []
    ceiling = max_size if max_size is not None else None
    if sizes is not None:
        if not sizes:
            raise UsageError("cudagraph_capture_sizes should contain at least one element when using cuda graph.",
                             hint="give at least one size, or --enforce-eager for no CUDA graphs")
        kept = sorted({int(s) for s in sizes if int(s) <= max_num_batched_tokens})
        valid_max = kept[-1] if kept else 0
        if max_size is not None and max_size != valid_max:
            raise UsageError(
                f"customized max_cudagraph_capture_size(={max_size}) should be consistent with the max value of "
                f"cudagraph_capture_sizes(={valid_max})",
                hint=f"--max-cudagraph-capture-size {valid_max}, or give only one of the two flags")
        if len(kept) < len(set(sizes)):
            notes.append(f"--cudagraph-capture-sizes: sizes above max_num_batched_tokens ({max_num_batched_tokens}) "
                         f"are dropped, as vLLM drops them; {len(kept)} graph size(s) kept")
        return kept, notes
    assert ceiling is not None
    largest = min(max_num_batched_tokens, ceiling)
    if largest < 1:
        raise UsageError("Maximum cudagraph size should be greater than or equal to 1 when using cuda graph.",
                         hint="--max-cudagraph-capture-size 1 or more, or --enforce-eager for no CUDA graphs")
    out = [s for s in (1, 2, 4) if s <= largest]
    if largest >= 8:
        out += list(range(8, min(largest + 1, 256), 8))
    if largest >= 256:
        out += list(range(256, largest + 1, 16))
    if max_num_batched_tokens <= largest:
        out.append(max_num_batched_tokens)
    out = sorted(set(out))
    if out[-1] != ceiling:
        notes.append(f"Truncating max_cudagraph_capture_size to {out[-1]}")
    return out, notes
