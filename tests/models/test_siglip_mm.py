"""SigLIP-tower multimodal models, worked by hand (vLLM 0.33.0): PaliGemma (paligemma.py), Eagle 2.5-VL
(eagle2_5_vl.py) and the Llama Nemotron VL embedding model (nemotron_vl.py::LlamaNemotronVLForEmbedding).

A tiny SigLIP (8 wide, 2 layers, MLP 16, patch 2, 4 px: 4 patches) throughout:
patch embed 8*3*2*2 = 96 + bias 8, positions 4*8 = 32, a layer 600 elements
(LN 32 + qkv 24*8 + 24 + out 64 + 8 + fc1 128 + 16 + fc2 128 + 8), post-LayerNorm 16.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.models.classic import Gemma
from vmemplan.models.gemma2 import Gemma2

_VISION = {"model_type": "siglip_vision_model", "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
           "intermediate_size": 16, "patch_size": 2, "image_size": 4}


def _text(model_type: str) -> dict:
    return {"model_type": model_type, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
            "num_key_value_heads": 2, "intermediate_size": 32, "vocab_size": 64, "head_dim": 8}


def _enc(adapter, ctx: GraphContext | None = None) -> int:
    return sum(t.elements for t in adapter.weight_tensors(ctx or GraphContext()) if t.kind == "encoder")


def _paligemma(text_type: str) -> dict:
    return {"architectures": ["PaliGemmaForConditionalGeneration"], "model_type": "paligemma",
            "projection_dim": 16, "text_config": _text(text_type), "vision_config": _VISION}


def test_paligemma_picks_gemma_or_gemma2_and_counts_the_tower():
    g1 = adapter_for(ModelConfig.from_dict(_paligemma("gemma")))
    g2 = adapter_for(ModelConfig.from_dict(_paligemma("gemma2")))
    assert isinstance(g1, Gemma) and not isinstance(g1, Gemma2)
    assert isinstance(g2, Gemma2)
    # tower 96 + 8 + 32 + 2*600 + post-LN 16, projector nn.Linear(8 -> projection_dim 16) + bias 16
    assert _enc(g1) == 96 + 8 + 32 + 1200 + 16 + 16 * 8 + 16
    ids = [t for t in g1.weight_tensors(GraphContext()) if t.name.endswith("embeddings.position_ids")]
    assert [(t.rows, t.cols, t.dtype) for t in ids] == [(1, 4, "int64")]
    assert g1.max_tokens_per_item(g1.config, GraphContext()) == {"image": 4}
    # images off: no tower, as vLLM's _mark_tower_model skips it
    off = GraphContext(limit_mm_per_prompt={"image": 0})
    assert not any(t.name.startswith("vision_tower") for t in g1.weight_tensors(off))


def test_eagle_select_layer_cuts_the_tower_and_drops_the_post_norm():
    raw = {"architectures": ["Eagle2_5_VLForConditionalGeneration"], "model_type": "eagle_2_5_vl",
           "select_layer": -2, "downsample_ratio": 0.5, "dynamic_image_size": False,
           "text_config": {**_text("qwen2"), "architectures": ["Qwen2ForCausalLM"]}, "vision_config": _VISION}
    a = adapter_for(ModelConfig.from_dict(raw))
    names = [t.name for t in a.weight_tensors(GraphContext())]
    assert not any(n.endswith("post_layernorm") for n in names)
    # 1 of 2 layers; mlp1: LN 2*32, Linear(32 -> 16) + 16, Linear(16 -> 16) + 16
    assert _enc(a) == 96 + 8 + 32 + 600 + 64 + 512 + 16 + 256 + 16
    # 4 patches folded 4:1, one tile
    assert a.max_tokens_per_item(a.config, GraphContext()) == {"image": 1}
    # supports_encoder_tp_data: data mode keeps qkv whole (24 rows), weights mode splits it (12)
    for mode, rows in (("data", 24), ("weights", 12)):
        qkv = [t for t in a.weight_tensors(GraphContext(tensor_parallel_size=2, mm_encoder_tp_mode=mode))
               if t.name.endswith("self_attn.qkv_proj") and "vision" in t.name]
        assert [t.rows for t in qkv] == [rows]


def test_nemotron_vl_embed_keeps_input_norm_buffers_without_images():
    raw = {"architectures": ["LlamaNemotronVLModel"], "model_type": "llama_nemotron_vl", "downsample_ratio": 0.5,
           "llm_config": {**_text("llama"), "architectures": ["LlamaBidirectionalModel"], "pooling": "avg"},
           "vision_config": _VISION}
    a = adapter_for(ModelConfig.from_dict(raw))
    # every layer + post-LN; mlp1 to the text width (16)
    assert _enc(a) == 96 + 8 + 32 + 1200 + 16 + 64 + 512 + 16 + 256 + 16
    off = [t for t in a.weight_tensors(GraphContext(limit_mm_per_prompt={"image": 0})) if "input_norm" in t.name]
    assert [(t.rows, t.dtype) for t in off] == [(3, "float32"), (3, "float32")]  # FusedMMInputNorm: 24 B
