"""DeepSeek-V3.2's FLASH_ATTN_MLA_SPARSE per-layer ``cu_seqlens_q_buffer`` (hand-computed).

vllm/v1/attention/backends/mla/flashattn_mla_sparse.py::FlashAttnMLASparseImpl.__init__ (0.33.0)
allocates ``torch.arange(topk_indices_buffer.shape[0] + 1, dtype=int32)`` on the device in every
sparse MLA layer: at 8,192 batched tokens 8,193 x 4 = 32,772 B a layer, 61 layers = 1,999,092 B.
FLASHMLA_SPARSE (Hopper, fp8 cache) allocates none.
"""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for

REG = Path(__file__).resolve().parents[2] / "registry" / "models"


def _cu(cache_dtype: str, tp: int = 8) -> list:
    a = adapter_for(ModelConfig.from_dict(json.loads((REG / "deepseek-ai--DeepSeek-V3.2.json").read_text())))
    ctx = GraphContext(tensor_parallel_size=tp, cache_dtype=cache_dtype, sm_major=9, block_size=64,
                       max_num_batched_tokens=8192, max_num_seqs=1024)
    return [t for t in a.weight_tensors(ctx) if t.name.endswith("cu_seqlens_q_buffer")]


def test_flash_attn_sparse_counts_cu_seqlens_per_layer():
    (t,) = _cu("auto")
    assert t.rows * t.cols * t.count * 4 == 61 * 8193 * 4 == 1_999_092


def test_flashmla_sparse_has_none():
    assert _cu("fp8") == []
