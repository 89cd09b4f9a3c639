"""vmemplan: plan vLLM GPU memory before you boot a GPU.

Public API (imported lazily so that ``import vmemplan`` stays cheap)::

    from vmemplan import plan
    result = plan("meta-llama/Llama-3.1-8B", gpu="h100", gpu_memory_utilization=0.92)
    print(result.kv_cache.tokens, result.kv_cache.max_concurrency)
"""

import sys as _sys  # first: no `from __future__` import, which would load a module before the handler


def _install_interrupt_handler() -> None:
    """Make Ctrl-C end the command line with one ``error:`` line, one ``hint:`` line and exit 130.

    Uses only ``_signal`` and ``os`` (both loaded before any of our code runs), so the handler is
    in place before typer, rich or pydantic start importing and no traceback can appear.
    """
    import _signal
    import os

    def on_sigint(signum: int, frame: object) -> None:  # noqa: ARG001 - signal handler signature
        try:
            os.write(2, b"error: interrupted\nhint: the run was stopped by Ctrl-C (SIGINT) before it finished;"
                        b" run it again\n")
        except OSError:
            pass
        os._exit(130)

    try:
        _signal.signal(_signal.SIGINT, on_sigint)
    except (ValueError, OSError):  # not the main thread, or no signals here
        pass


if _sys.argv[:1] == ["-m"] or (_sys.argv[:1] and _sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1]
                                in ("vmemplan", "vmemplan.exe")):
    _install_interrupt_handler()  # the process is the command line (`python -m vmemplan`, the script)

from vmemplan._version import __version__  # noqa: E402 - after the interrupt handler

__all__ = ["__version__", "plan", "plan_from_flags", "MemoryPlan", "PlanInputs", "load_registry"]


def __getattr__(name: str) -> object:
    if name in ("plan", "plan_from_flags"):
        from vmemplan import api

        return getattr(api, name)
    if name == "MemoryPlan":
        from vmemplan.result import MemoryPlan

        return MemoryPlan
    if name == "PlanInputs":
        from vmemplan.resolve import PlanInputs

        return PlanInputs
    if name == "load_registry":
        from vmemplan.registry import load_registry

        return load_registry
    raise AttributeError(name)
