"""Worked examples for the multimodal wave: compressed-tensors WNA16 fused-expert ``weight_shape``,
Kimi-K2.5's vision-config reading, and the towers of LightOnOCR / Idefics3 / Cohere2-Vision (hand-computed).

* compressed_tensors_moe_wna16.py::CompressedTensorsWNA16MoEMethod.create_weights (vLLM 0.33.0)
  registers ``w13_weight_shape`` and ``w2_weight_shape`` = ``torch.empty(num_experts, 2)`` in the
  default (model) dtype: 2 x 2 B per expert each in bf16.  Kimi-K2.5: 60 MoE layers x 384 experts x
  (4 + 4) B = 184,320 B per rank at any TP (no EP).
"""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws.quant_config import scheme_for
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_class
from vmemplan.models.kimi_k25 import kimi_k25_vision

CFGS = Path(__file__).resolve().parents[1] / "fixtures" / "oracle" / "configs"


def _raw(name: str) -> dict:
    return json.loads((CFGS / name).read_text())


def test_wna16_fused_experts_hold_their_weight_shape_in_the_model_dtype():
    qc = _raw("nvidia--Kimi-K2.5-NVFP4.json")["text_config"]["quantization_config"]
    scheme = scheme_for(qc, sm_major=9)
    w13 = WeightTensor("mlp.experts.w13_weight", "expert", 2 * 2048 // 8, 7168, 384 * 60, True, in_features_full=7168)
    parts = dict(scheme.unit_parts(w13, 1, 2))
    assert parts["weight_shape"] == 2 * 2  # [1 expert, 2] in bf16
    # qweight 512 x 7168 x 4 bit = 1,835,008 B; scales 512 x 224 groups x 2 B = 229,376 B
    assert parts["qweight"] == 1_835_008 and parts["scales"] == 229_376
    assert 2 * 60 * 384 * parts["weight_shape"] == 184_320


def test_kimi_k25_vision_reads_defaults_for_vt_spellings():
    vc = kimi_k25_vision({"vt_hidden_size": 999, "init_pos_emb_time": 4, "init_pos_emb_height": 64})
    assert vc["hidden_size"] == 1152 and vc["num_hidden_layers"] == 27 and vc["intermediate_size"] == 4304
    assert vc["init_pos_emb_time"] == 4 and vc["init_pos_emb_height"] == 64 and vc["init_pos_emb_width"] == 64


def _tower_bytes(name: str, tp: int = 1) -> int:
    cfg = ModelConfig.from_dict(_raw(name))
    adapter = adapter_class(cfg.architecture)(cfg)
    ctx = GraphContext(tensor_parallel_size=tp)
    return sum(t.elements * (1 if t.dtype is None else 4 if t.dtype in ("float32", "int32") else 8)
               for t in adapter.vision_weight_tensors(cfg, ctx) if t.dtype is not None)


def test_fp32_and_int64_buffers_of_the_towers():
    # LightOnOCR: Pixtral rotary inv_freq + original_inv_freq, 32 fp32 each (head_dim 64)
    assert _tower_bytes("lightonai--LightOnOCR-2-1B.json") == 2 * 32 * 4
    # Cohere2-Vision: SigLIP position_ids, (512 / 16)^2 = 1,024 int64
    assert _tower_bytes("CohereLabs--command-a-vision-07-2025.derived.json") == 1024 * 8
