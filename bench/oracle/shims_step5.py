#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on Step5ForCausalLM (vLLM 0.33.0 vllm/models/step5/nvidia/).

    python bench/oracle/shims_step5.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: every DSA (sparse full-attention) layer's ``Step5DSAAttentionImpl.__init__``
(vllm/models/step5/nvidia/sparse_attention.py) builds the per-device
``Step5FlashInferSparse`` adapter (flashinfer_sparse.py, shared through a
``functools.cache``), whose constructor imports ``BatchPrefillWithRaggedKVCacheWrapper`` from
the ``flashinfer`` kernel package and ``fp8_paged_mqa_logits`` from ``flashinfer.attn_scores``.
That package is absent on the oracle's CPU host, so the model cannot be built.

What the shim does, and nothing else: while (and only while) ``Step5FlashInferSparse.__init__``
runs, it puts a stand-in ``flashinfer`` package (and ``flashinfer.attn_scores``) in
``sys.modules`` with those two names; everywhere else flashinfer stays absent, as without the
shim (``has_flashinfer``, the backend selector).  vLLM's own
``Step5FlashInferSparse.__init__`` then runs unchanged, so its 128 MiB uint8 ``_workspace``
(``torch.empty(128 << 20, device=...)``, sent to meta by the oracle) is allocated exactly as on a
GPU and reached by the oracle's ``other_device_tensors`` (``attn.impl.adapter._workspace``).
The stand-in wrapper allocates what flashinfer's own
``BatchPrefillWithRaggedKVCacheWrapper.__init__`` allocates on the device (flashinfer/prefill.py:
the 8 MiB uint8 ``_int_workspace_buffer`` on the float workspace's device) and keeps the float
workspace it was given; flashinfer's 8 MiB pinned-host copy of the int workspace is host memory
(not GPU memory, and the CPU host has no pinned allocator), so it is left out.
``fp8_paged_mqa_logits`` is a kernel function the forward would call; the oracle never runs a
forward.  Parameters, buffers and KV cache specs come from vLLM's own code; nothing else is
replaced.  The stand-in is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys
import types

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_step5.py: the flashinfer kernel package (absent on the CPU host) replaced "
        "by a stand-in with BatchPrefillWithRaggedKVCacheWrapper (allocating, as flashinfer's does, an 8 MiB "
        "uint8 int workspace on the float workspace's device; its pinned-host copy left out) and "
        "flashinfer.attn_scores.fp8_paged_mqa_logits (a forward kernel, never called); vLLM's "
        "Step5FlashInferSparse runs unchanged, with its 128 MiB uint8 workspace")

_INT_WORKSPACE_BYTES = 8 * 1024 * 1024


class BatchPrefillWithRaggedKVCacheWrapper:
    """Stand-in for flashinfer.prefill.BatchPrefillWithRaggedKVCacheWrapper: its constructor's
    device allocation only (the 8 MiB uint8 int workspace beside the float workspace)."""

    def __init__(self, float_workspace_buffer, kv_layout: str = "NHD", *args, backend: str = "auto",
                 **kwargs) -> None:
        import torch

        self._kv_layout = kv_layout
        self._backend = backend
        self._float_workspace_buffer = float_workspace_buffer
        self.device = float_workspace_buffer.device
        self._int_workspace_buffer = torch.empty((_INT_WORKSPACE_BYTES,), dtype=torch.uint8, device=self.device)


def fp8_paged_mqa_logits(*args, **kwargs):
    raise NotImplementedError("flashinfer stand-in (shims_step5): kernels do not run on the oracle")


def _stand_in_modules() -> dict[str, types.ModuleType]:
    pkg = types.ModuleType("flashinfer")
    pkg.__doc__ = "stand-in installed by bench/oracle/shims_step5.py (no flashinfer on this host)"
    pkg.__path__ = []  # a package, so `from flashinfer.attn_scores import ...` resolves through sys.modules
    pkg.BatchPrefillWithRaggedKVCacheWrapper = BatchPrefillWithRaggedKVCacheWrapper
    scores = types.ModuleType("flashinfer.attn_scores")
    scores.fp8_paged_mqa_logits = fp8_paged_mqa_logits
    pkg.attn_scores = scores
    return {"flashinfer": pkg, "flashinfer.attn_scores": scores}


def install() -> None:
    """Wrap Step5FlashInferSparse.__init__ so that the stand-in modules are in ``sys.modules`` only
    while vLLM's constructor runs: everywhere else (vllm.utils.flashinfer.has_flashinfer, the
    backend selector) flashinfer stays as absent as without the shim."""
    import vllm.models.step5.nvidia.flashinfer_sparse as fs

    original = fs.Step5FlashInferSparse.__init__

    def init(self, device):
        saved = {name: sys.modules.get(name) for name in ("flashinfer", "flashinfer.attn_scores")}
        sys.modules.update(_stand_in_modules())
        try:
            original(self, device)
        finally:
            for name, mod in saved.items():
                if mod is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = mod

    fs.Step5FlashInferSparse.__init__ = init


def main() -> int:
    return shim_main(lambda _oracle: install(), NOTE)


if __name__ == "__main__":
    sys.exit(main())
