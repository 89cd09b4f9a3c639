"""vLLM environment variables that change a plan, read from the process environment (the
request layer: a pasted command's ``VAR=value`` prefix is set there while planning, see
vmemplan/request/engine.py::_command_environment).
"""

from __future__ import annotations

import os

from vmemplan.core.errors import UsageError

__all__ = ["ESTIMATE_CUDAGRAPHS", "cudagraph_estimate_env"]

#: vllm/envs.py (0.33.0): ``bool(int(os.getenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "1")))``;
#: the default is the rules pack's ``estimate_subtracted_by_default`` ('0' in 0.18 and 0.19).
ESTIMATE_CUDAGRAPHS = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"


def cudagraph_estimate_env() -> bool | None:
    """The value of VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS as vLLM parses it (``int`` then
    ``bool``), or ``None`` when unset.  A value vLLM's ``int()`` rejects makes vLLM fail on start:
    a usage error here."""
    raw = os.environ.get(ESTIMATE_CUDAGRAPHS)
    if raw is None:
        return None
    try:
        return bool(int(raw.strip()[:20]))
    except ValueError:
        raise UsageError(f"{ESTIMATE_CUDAGRAPHS}={raw[:40]!r} is not an integer: vLLM reads it with int() and stops",
                         hint=f"set {ESTIMATE_CUDAGRAPHS}=1 (subtract the CUDA-graph estimate) or 0, or unset it") from None
