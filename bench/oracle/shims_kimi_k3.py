#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on KimiK3ForConditionalGeneration (vLLM 0.33.0
vllm/models/kimi_k3/nvidia/model.py).

    python bench/oracle/shims_kimi_k3.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

Why: ``KimiK3ForConditionalGeneration.__init__`` moves the vision tower to the GPU in the model
dtype (``self.vision_tower.to(device=..., dtype=model_config.dtype)``) unless
``is_meta_module(self.vision_tower)``, the case of online quantization, which builds weights on
the meta device.  On the oracle's meta device every module is meta, so the move is skipped and
the one tensor the tower does not build on the current device stays behind on the host:
``patch_embed.pos_emb.time_weight`` (kimi_k25_vit.py::Learnable2DInterpPosEmbDivided_fixed), a
non-persistent sin-cos buffer made with ``torch.from_numpy(...).float()`` (a CPU fp32 tensor,
``[pos_emb_time, 1, hidden]``).  On a GPU host with an unquantized checkpoint that buffer is
moved to the GPU and cast to the model dtype, and vLLM holds it there.

What the shim does, and nothing else: when the model's ``is_meta_module`` answers for a module
that is meta, it first does to that module's host buffers what the skipped ``.to(device, dtype)``
does on a GPU host -- each floating-point buffer not on the meta device becomes a meta tensor of
the same shape in the dtype of the module's parameters -- and then returns the same answer
(so the model's own code path is unchanged).  The figures then count ``time_weight`` as the GPU
host holds it (``pos_emb_time × hidden`` elements in the model dtype).  Recorded in the fixture's
``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py

NOTE = ("shim bench/oracle/shims_kimi_k3.py: the vision tower's host buffers (patch_embed.pos_emb.time_weight, "
        "CPU fp32 from torch.from_numpy) moved to the meta device in the parameters' dtype, as "
        "KimiK3ForConditionalGeneration's vision_tower.to(device, dtype=model dtype) does on a GPU host; the "
        "oracle skips that move because is_meta_module is true for every module on the meta device")


def _install(oracle) -> None:
    import torch
    import vllm.models.kimi_k3.nvidia.model as k3

    original = k3.is_meta_module

    def is_meta_module(module: torch.nn.Module) -> bool:
        answer = original(module)
        if answer:
            dtype = next((p.dtype for p in module.parameters()), None)
            for owner in module.modules():
                for name, buf in list(owner._buffers.items()):
                    if buf is not None and not buf.is_meta and buf.is_floating_point() and dtype is not None:
                        owner._buffers[name] = torch.empty(buf.shape, dtype=dtype, device="meta")
        return answer

    k3.is_meta_module = is_meta_module
    oracle.ASSUMPTIONS.append(NOTE)


def main() -> int:
    return shim_main(_install)


if __name__ == "__main__":
    sys.exit(main())
