#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on FlintForCausalLM (vLLM 0.33.0 vllm/models/flint/).

    python bench/oracle/shims_flint.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: ``vllm/models/flint/model.py::FlintAttention.__init__`` imports
``FlashInferImpl``/``FlashInferMetadata``/``FlashInferTrtllmAPIDecode`` from
``vllm.v1.attention.backends.flashinfer`` (whose module imports the ``flashinfer`` kernel
package, absent on the oracle's CPU host) and asserts that its ``Attention`` got the FlashInfer
implementation ("Flint requires FlashInfer attention").  On a GPU host Flint runs where vLLM
picks FlashInfer (the SM100 default, vllm/platforms/cuda.py::_get_backend_priorities, or
``--attention-backend FLASHINFER``).

What the shim does, and nothing else: before the oracle runs, it puts a stand-in module
under that name in ``sys.modules`` with the three class names (no ``flashinfer`` import);
the stand-in ``FlashInferImpl`` passes ``isinstance`` for any object, so Flint's assert
accepts the backend the oracle selected.  Any other name (``FlashInferBackend``, which the
backend selector resolves) raises ``ImportError``, so the selector sees FlashInfer as absent,
exactly as without the shim.  The metadata classes are used only in forward
(decode planning), which the oracle never runs.

Why it does not change the figures: the parameters, buffers and the ``Attention`` module
(its four scales, its ``sinks`` parameter, its KV cache spec) are built by the same vLLM code
whatever the backend; ``Attention.get_kv_cache_spec`` gives a ``FullAttentionSpec`` /
``SlidingWindowSpec`` from heads, head size, dtype, window and block size only.  The block
size is 16 either way (neither ``FlashInferBackend`` nor ``FlashAttentionBackend`` prefers
another one for a bf16 cache with head size 128), and a FlashInfer cache page
(``[2, block, kv_heads, head]`` a block) has the same bytes as a FlashAttention one.  What
does differ, the attention kernels and their workspaces, the oracle does not count anyway.
The stand-in is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys
import types

from _shim import load_oracle, run_oracle  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_flint.py: vllm.v1.attention.backends.flashinfer replaced by a "
        "stand-in module (FlashInferImpl passes isinstance for any impl; the flashinfer kernel "
        "package is absent on the CPU host), so FlintAttention's 'requires FlashInfer' import and "
        "assert accept the backend the oracle selected; parameters, buffers and KV cache specs "
        "come from the same vLLM code whatever the backend (block size 16, same page bytes)")


class _AnyInstance(type):
    def __instancecheck__(cls, obj: object) -> bool:  # noqa: N805
        return True


def install() -> None:
    name = "vllm.v1.attention.backends.flashinfer"
    mod = types.ModuleType(name)
    mod.__doc__ = "stand-in installed by bench/oracle/shims_flint.py (no flashinfer on this host)"
    mod.FlashInferImpl = _AnyInstance("FlashInferImpl", (), {})
    mod.FlashInferMetadata = type("FlashInferMetadata", (), {})
    mod.FlashInferTrtllmAPIDecode = type("FlashInferTrtllmAPIDecode", (), {})

    def missing(attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)  # module introspection (inspect, hasattr)
        # anything else (FlashInferBackend, looked up by the backend selector) stays as
        # unavailable as without the shim: the selector treats ImportError as "backend absent"
        raise ImportError(f"{name}.{attr}: flashinfer is not installed (shims_flint stand-in)")

    mod.__getattr__ = missing
    sys.modules[name] = mod


def main() -> int:
    oracle_path = sys.argv[1]
    oracle = load_oracle(oracle_path)
    install()
    oracle.ASSUMPTIONS.append(NOTE)
    return run_oracle(oracle, oracle_path)


if __name__ == "__main__":
    sys.exit(main())
