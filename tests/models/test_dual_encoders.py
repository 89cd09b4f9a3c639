"""CLIP / SigLIP dual encoders as embedding models (vmemplan/models/dual_encoders.py), worked by
hand against vLLM 0.33.0's clip.py::CLIPEmbeddingModel and siglip.py::SiglipEmbeddingModel."""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import GraphContext
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures/oracle/configs"


def _adapter(name: str):
    return adapter_for(ModelConfig.from_dict(json.loads((CONFIGS / name).read_text())))


def _bytes(adapter, tp: int = 1) -> int:
    ctx = GraphContext(model_dtype="float16", tensor_parallel_size=tp, max_model_len=77)
    return weight_bytes_per_rank(adapter.weight_tensors(ctx), model_dtype="float16",
                                 allocator_rounding=False).unrounded_bytes


def test_clip_weights_and_text_kv_cache():
    """CLIPConfig defaults (ViT-B/32), fp16, TP 1.  Text: tokens 49408*512, positions 77 -> 128
    rows * 512, 12 layers of 3,152,384 (biased qkv/out/fc1/fc2, two LayerNorms), final LN, the
    512x512 text_projection: 63,454,208.  Vision: patch 768*3*32*32, 50 positions, class token,
    pre-LN, 12 layers of 7,087,872, post-LN, visual_projection 512*768: 87,849,216.  151,303,424
    elements * 2 B + 50 int64 position_ids + 12 x 16 B of scales = 302,607,440 B (vLLM 0.33's own
    figure, fixture openai-CLIPConfig-defaults.synthetic.tp1).  The text layers are decoder
    Attention: 12 full-attention specs of 8 heads x 64."""
    clip = _adapter("openai--CLIPConfig-defaults.synthetic.json")
    assert clip.derived_max_model_len() == 77
    assert _bytes(clip) == 302_607_440
    specs = clip.kv_cache_specs(GraphContext(model_dtype="float16", tensor_parallel_size=2))
    assert len(specs) == 12 and {s.num_kv_heads for s in specs.values()} == {4}


def test_siglip_weights_with_the_pooling_head():
    """SiglipConfig defaults (base-patch16-224), fp16, TP 1.  Text: 32000*768 + 64*768 positions,
    12 layers of 7,087,872, final LN, head 768*768 + 768: 110,271,744.  Vision: patch 768*3*16*16
    + bias, 196 positions, 12 layers, post-LN, and the attention-pool head (probe, MHA in_proj
    2304*768 + 2304, out_proj 768*768 + 768, LN, MLP 3072*768 + 3072 + 768*3072 + 768 = 7,087,104):
    92,884,224.  203,155,968 elements * 2 B + (64 + 196) int64 position_ids + 192 B of scales =
    406,314,208 B (fixture google-SiglipConfig-defaults.synthetic.tp1); no KV cache."""
    siglip = _adapter("google--SiglipConfig-defaults.synthetic.json")
    assert _bytes(siglip) == 406_314_208
    assert siglip.kv_cache_specs(GraphContext(model_dtype="float16")) == {}
    no_head = adapter_for(ModelConfig.from_dict({**json.loads((CONFIGS / "google--SiglipConfig-defaults.synthetic.json")
                                                              .read_text()),
                                                 "vision_config": {**siglip.config.raw["vision_config"],
                                                                   "vision_use_head": False}}))
    assert _bytes(siglip) - _bytes(no_head) == 7_087_104 * 2
