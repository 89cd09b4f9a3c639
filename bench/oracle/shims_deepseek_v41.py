#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on DeepseekV41ForCausalLM (DeepSeek-V4.1 with its vision tower;
vLLM 0.33.0 vllm/models/deepseek_v41/).

    python bench/oracle/shims_deepseek_v41.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why, first: the Engram n-gram tables (``language_model.model.layers.{i}.engram.embed_tokens.weight``,
fp8 ``[rows, engram_head_dim]``, and ``weight_scale_inv``, uint8 ``[rows, engram_head_dim / 32]``).  vLLM's
default ``EngramConfig`` has ``cpu_offload=True`` (vllm/config/engram.py), and on a GPU host
common/engram.py::ParallelEngramEmbedding._allocate_weights puts both in pinned host memory
(``torch.empty(..., device="cpu", pin_memory=True)``; lookups go through a UVA view, no device memory).
On the meta device the same function takes its first branch (``torch.get_default_device().type ==
"meta"``) and returns default-device tensors, so the oracle counts about 200 GB of host tables as GPU
weights.  The shim takes the GPU host's branch instead: while ``cpu_offload`` is set without peer rows,
DP-shared memory or huge pages (the default), the two tables are a one-element CPU tensor expanded to the
same shape and dtype (the CPU host has no pinned allocator, and the real tables would be ~200 GB of host
memory).  The oracle counts parameters off the meta device as ``host_tensors_bytes``, not GPU memory, so
the GPU figures are what a GPU host holds (``host_tensors_bytes`` is then the tables' nominal bytes).
Every other Engram tensor (``wkv``, ``q_weight``, ``k_weight``, the device staging rows, the hash buffers)
is built by vLLM's own code.

Second: ``process_weights_after_loading`` stopped at the MXFP4 experts' Marlin repack
(quantization/utils/marlin_utils_fp4.py::_repack_marlin_experts calls ``ops.gptq_marlin_repack`` and
reads ``.shape`` of its result; the oracle runs compiled ops as no-ops returning None, hence
"AttributeError: 'NoneType' object has no attribute 'shape'"), so the fixture kept construction-time
weights.  vLLM registers a fake kernel for that op (_custom_ops.py::_gptq_marlin_repack_fake: ``[size_k /
16, size_n × 16 / (32 / num_bits)]`` of the input's dtype), but only when ``torch.ops._C`` has the op at
import, which the oracle's placeholder ops hide.  The shim makes ``ops.gptq_marlin_repack`` answer as that
fake kernel (same shape and dtype as the real op's result), so vLLM's own post-processing runs to the end.
Both steps are recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE_HOST = ("shim bench/oracle/shims_deepseek_v41.py: the Engram tables (ParallelEngramEmbedding weight and "
             "weight_scale_inv; EngramConfig's default cpu_offload puts them in pinned host memory on a GPU host, "
             "where _allocate_weights takes its device='cpu' branch) allocated as a one-element CPU tensor expanded "
             "to the same shape and dtype instead of meta tensors, so they count as host_tensors_bytes, not GPU "
             "weights (the CPU host has no pinned allocator)")
NOTE_MARLIN = ("shim bench/oracle/shims_deepseek_v41.py: vllm._custom_ops.gptq_marlin_repack answers as vLLM's own "
               "fake kernel (_gptq_marlin_repack_fake: [size_k / 16, size_n * 16 / (32 / num_bits)], the input's "
               "dtype), which vLLM registers only when torch.ops._C has the op at import, so "
               "process_weights_after_loading's Marlin MXFP4 expert repack runs to the end on meta")


def _host_tables(torch) -> None:
    from vllm.models.deepseek_v41.common import engram

    cls = engram.ParallelEngramEmbedding
    original = cls._allocate_weights

    def allocate_weights(self):
        if not (self.cpu_offload and not self.peer_rows and not self.dp_shared_memory and not self.use_thp):
            return original(self)
        rows, scale_dim = self.part_num_embeddings, self.dim // self.block_size

        def host(cols, dtype):
            return torch.empty((1,), dtype=dtype, device="cpu").expand(rows, cols)

        return host(self.dim, torch.float8_e4m3fn), host(scale_dim, torch.uint8)

    cls._allocate_weights = allocate_weights


def _marlin_repack(torch) -> None:
    import vllm._custom_ops as ops

    def gptq_marlin_repack(b_q_weight, size_k, size_n, num_bits, is_a_8bit=False):
        pack_factor = 32 // num_bits
        return torch.empty((size_k // 16, size_n * 16 // pack_factor), dtype=b_q_weight.dtype,
                           device=b_q_weight.device)

    ops.gptq_marlin_repack = gptq_marlin_repack


def install(oracle) -> None:
    import torch

    _host_tables(torch)
    _marlin_repack(torch)
    oracle.ASSUMPTIONS.append(NOTE_HOST)
    oracle.ASSUMPTIONS.append(NOTE_MARLIN)


def main() -> int:
    return shim_main(install)


if __name__ == "__main__":
    sys.exit(main())
