"""The verdict line: the answer of ``size`` (and ``--quiet``) in one line.

Starts or not, the KV cache in tokens, how many requests of the context length run at once,
and the limit that binds there.  The figures come from :func:`vmemplan.concurrency.headline`;
this module only words them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vmemplan.concurrency import Headline

__all__ = ["verdict_line"]


def verdict_line(h: Headline) -> str:
    """``✔ vLLM starts: …``, ``? vLLM may not start: …`` (the error band straddles the line) or
    ``✘ vLLM would not start: …`` (no trailing newline)."""
    if h.outcome == "may_not_start":
        lo, hi = h.kv_cache_tokens_range or (0, 0)
        if h.starts:
            return (f"? vLLM may not start: {h.kv_cache_tokens:,} KV tokens at the estimate, but the error "
                    f"band's low end ({lo:,} tokens) does not start")
        reason = (h.reason or "a startup check fails").rstrip(".")
        return f"? vLLM may not start: {reason}; the error band's high end ({hi:,} tokens) starts"
    if h.starts:
        limit = "KV cache binds" if h.binding == "kv_cache" else f"--max-num-seqs {h.max_num_seqs:,} binds"
        return (f"✔ vLLM starts: {h.kv_cache_tokens:,} KV tokens; {h.concurrency:,} × "
                f"{h.context_tokens:,}-token requests fit; {limit}")
    reason = (h.reason or "a startup check fails").rstrip(".")
    extra = (f" Largest --max-model-len that fits: {h.max_model_len_that_fits:,}."
             if h.max_model_len_that_fits else "")
    return f"✘ vLLM would not start: {reason}.{extra}"
