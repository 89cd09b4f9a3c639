"""Hints for people: the ``hint:`` line of a plan that does not start, and pasteable commands.

The figures come from :mod:`vmemplan.advice` (which re-plans through the pipeline); this module
only words them.  A hint never suggests what cannot be done (a util above 1.0) and never an
elided command (``…``): every command it names can be pasted as it is.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vmemplan.advice import Fixes

__all__ = ["fix_hint", "command_line", "solve_command"]

#: What a solve varies when the user did not fix it: the levers that buy KV cache.
_LEVERS = (("tensor_parallel_size", "tensor-parallel-size=1,2,4,8"), ("kv_cache_dtype", "kv-cache-dtype=auto,fp8"),
           ("gpu_memory_utilization", "gpu-memory-utilization=0.85:0.95:0.05"))


def command_line(words: Sequence[str]) -> str:
    """A shell-quoted command line."""
    return " ".join(shlex.quote(str(w)) for w in words)


def fix_hint(fixes: Fixes) -> str:
    """One line naming what would make the plan start."""
    from vmemplan.advice import PARALLEL_SIZES, QUANTIZATIONS

    if fixes.max_model_len:
        return f"--max-model-len {fixes.max_model_len} would fit"
    if fixes.kv_cache_memory_needed:
        return "give --kv-cache-memory a size the cache can use (e.g. 8G), or leave it out to let the budget decide"
    options = []
    lowered = fixes.util_lowered and fixes.gpu_memory_utilization is not None
    if fixes.gpu_memory_utilization is not None and not lowered:
        options.append(f"--gpu-memory-utilization {fixes.gpu_memory_utilization:g}")
    if fixes.tensor_parallel_size:
        options.append(f"-tp {fixes.tensor_parallel_size}")
    if fixes.pipeline_parallel_size:
        options.append(f"-pp {fixes.pipeline_parallel_size}")
    if fixes.quantization:
        options.append(f"--quantization {fixes.quantization}")
    util = f"--gpu-memory-utilization {fixes.gpu_memory_utilization:g}" if lowered else ""
    if lowered and not options:
        return f"{util} would start it"
    tail = f", each with {util}" if lowered and len(options) > 1 else f" with {util}" if lowered else ""
    if len(options) == 1:
        return f"{options[0]}{tail} would start it"
    if options:
        return "each of these would start it: " + ", ".join(options) + tail + " (the smallest that fit)"
    tried = f"-tp {PARALLEL_SIZES[-1]}, -pp {PARALLEL_SIZES[-1]}, --quantization {'/'.join(QUANTIZATIONS)}"
    more = "" if fixes.util_at_limit else "a higher --gpu-memory-utilization, "
    return f"none of {more}{tried} starts it on this GPU: pick a GPU with more memory (see `vmemplan gpus`)"


def _flag_words(name: str, value: Any) -> list[str]:
    flag = "--" + name.replace("_", "-")
    if isinstance(value, bool):
        return [flag if value else "--no-" + flag[2:]]
    return [flag, str(value)]


def solve_command(model: str, gpu: str, engine: Mapping[str, Any], gates: Sequence[Any]) -> str:
    """A whole `vmemplan sweep … --solve` command for these gates, with the user's own flags, that
    varies the levers the user left free (tp, KV cache dtype, util)."""
    free = [(name, vary) for name, vary in _LEVERS if engine.get(name) is None] or [_LEVERS[0]]
    varied = {name for name, _ in free[:2]}
    words = ["vmemplan", "sweep", model, "--gpu", gpu]
    for name, value in engine.items():
        if value is not None and name not in varied:
            words += _flag_words(name, value)
    for _, vary in free[:2]:
        words += ["--vary", vary]
    words.append("--solve")
    for g in gates:
        words += ["--" + g.name.replace("_", "-"), str(g.target)]
        if g.request_tokens is not None and "--request-tokens" not in words:
            words += ["--request-tokens", str(g.request_tokens)]
    if any(getattr(g, "on", "central") == "low" for g in gates):
        words += ["--gate-on", "low"]
    return command_line(words)
