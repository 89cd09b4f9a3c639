"""ColPali (vmemplan/models/colpali.py), worked by hand against vLLM 0.33.0's colpali.py."""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import GraphContext
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

CONFIG = Path(__file__).resolve().parents[1] / "fixtures/oracle/configs/vidore--ColPaliConfig-defaults.synthetic.json"


def test_colpali_weights_by_hand():
    """ColPaliConfig defaults (PaliGemma-3B inside vlm_config), bf16, TP 1.  Gemma decoder: tied
    embed 257152*2048, 18 layers of 2560*2048 + 2048*2048 + 32768*2048 + 2048*16384 + 2*2048,
    final norm: 2,508,531,712.  SigLIP (1152 wide, 27 layers of 14,760,064, patch 1152*3*14*14 +
    bias, 256 positions, post-LN): 399,497,472.  Projector 2048*1152 + 2048.  2,910,390,528
    elements * 2 B = 5,820,781,056 B, + rotary 8192 x 256 x 2 B, the 2-B normalizer, 256 int64
    position_ids, 18 x 16 B of scales, and custom_text_proj 128 x 2048 in fp32 (the pooling head
    dtype, 1,048,576 B) = 5,826,026,274 B (vLLM 0.33's own figure, fixture
    vidore-ColPaliConfig-defaults.synthetic.tp1)."""
    adapter = adapter_for(ModelConfig.from_dict(json.loads(CONFIG.read_text())))
    assert adapter.config.hidden_size == 2048 and adapter.config.num_hidden_layers == 18  # vlm_config.text_config
    ctx = GraphContext(model_dtype="bfloat16", max_model_len=8192)
    tensors = adapter.weight_tensors(ctx)
    assert [t.dtype for t in tensors if t.name == "custom_text_proj"] == ["float32"]
    got = weight_bytes_per_rank(tensors, model_dtype="bfloat16", allocator_rounding=False).unrounded_bytes
    assert got == 5_826_026_274
    assert adapter.max_tokens_per_item(adapter.config, ctx) == {"image": 256}
