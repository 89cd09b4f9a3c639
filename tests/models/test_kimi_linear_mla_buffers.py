"""Kimi-Linear's MLA layers: three fp32 [1] buffers beyond the Attention scales (hand-computed).

vllm/models/kimi_k3/nvidia/mla.py (0.33.0): MultiHeadLatentAttention.__init__ registers
``_one_scale`` (torch.ones(1)); its process_weights_after_loading registers ``_q_scale_inv`` and
``_k_scale_inv`` (the reciprocals, reshaped to [1]).  Kimi-Linear-48B-A3B has 7 MLA layers
(full_attn_layers): 7 x 3 x 4 B = 84 B per rank at any TP.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for

CFG = Path(__file__).resolve().parents[2] / "registry" / "models" / "moonshotai--Kimi-Linear-48B-A3B-Instruct.json"


@pytest.mark.parametrize("tp", [1, 2])
def test_three_fp32_buffers_per_mla_layer(tp: int):
    a = adapter_for(ModelConfig.from_dict(json.loads(CFG.read_text())))
    (t,) = [t for t in a.weight_tensors(GraphContext(tensor_parallel_size=tp)) if "_one_scale" in t.name]
    assert (t.rows, t.cols, t.count, t.dtype) == (3, 1, 7, "float32")
    assert t.rows * t.cols * t.count * 4 == 84
