"""LLaVA (``LlavaForConditionalGeneration``) with a SigLIP tower, worked by hand.

vLLM 0.33.0 llava.py builds the tower with ``init_vision_tower_for_llava(..., require_post_norm=False)``:
no post-LayerNorm on the SigLIP (siglip.py::SiglipVisionTransformer) or CLIP
(clip.py::CLIPVisionTransformer) path even when every layer runs; SigLIP keeps its int64
``position_ids`` buffer (siglip.py::SiglipVisionEmbeddings); the decoder is the text config's own
architecture (a Qwen2 text config brings q/k/v biases); no ``supports_encoder_tp_data``, so
``--mm-encoder-tp-mode data`` still splits the tower.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.models.multimodal import Llava


def _raw(vision_type: str = "siglip_vision_model", strategy: str = "full") -> dict:
    return {
        "architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
        "vision_feature_layer": -1, "vision_feature_select_strategy": strategy,
        "text_config": {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 16,
                        "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
                        "intermediate_size": 32, "vocab_size": 64},
        "vision_config": {"model_type": vision_type, "hidden_size": 8, "num_hidden_layers": 2,
                          "num_attention_heads": 2, "intermediate_size": 16, "patch_size": 2, "image_size": 4},
    }


def test_llava_siglip_tower_by_hand():
    a = adapter_for(ModelConfig.from_dict(_raw()))
    assert isinstance(a, Llava)
    tensors = a.weight_tensors(GraphContext())
    enc = [t for t in tensors if t.kind == "encoder"]
    # every layer runs (-1 of 2), yet no post-LayerNorm:
    # patch 8*3*2*2 = 96 + bias 8, positions (4/2)^2 = 4 -> 32
    # layer: LN 32 + qkv 24*8 + 24 + out 64 + 8 + fc1 128 + 16 + fc2 128 + 8 = 600, twice = 1200
    # projector: 16*8 + 16 + 16*16 + 16 = 416
    assert sum(t.elements for t in enc) == 96 + 8 + 32 + 1200 + 416
    assert not any(t.name.endswith("post_layernorm") for t in tensors)
    ids = [t for t in tensors if t.name.endswith("embeddings.position_ids")]
    assert [(t.rows, t.cols, t.dtype) for t in ids] == [(1, 4, "int64")]  # arange(4): 32 bytes
    # Qwen2 decoder: q/k/v biases, 16 + 16 + 16 = 48 rows
    assert any(t.name.endswith("qkv_proj.bias") and t.rows == 48 for t in tensors)
    # 'full' on SigLIP (no class token): the 4 patches
    assert a.max_tokens_per_item(a.config, GraphContext()) == {"image": 4}


def test_llava_tower_split_even_in_data_mode():
    a = adapter_for(ModelConfig.from_dict(_raw()))
    for mode in ("weights", "data"):
        qkv = [t for t in a.weight_tensors(GraphContext(tensor_parallel_size=2, mm_encoder_tp_mode=mode))
               if t.name.endswith("encoder.layers.self_attn.qkv_proj")]
        assert [t.rows for t in qkv] == [12]  # 3 * 8 / 2


def test_llava_clip_all_layers_no_post_norm():
    a = adapter_for(ModelConfig.from_dict(_raw("clip_vision_model", "default")))
    tensors = a.weight_tensors(GraphContext())
    assert not any(t.name.endswith("post_layernorm") for t in tensors)
    # CLIP: 4 patches + the class token, 'default' drops one
    assert a.max_tokens_per_item(a.config, GraphContext()) == {"image": 4}


def test_feature_layer_list_takes_the_deepest_index():
    from vmemplan.models.multimodal import _feature_layers

    # llava.py::_get_num_hidden_layers: max(get_layer_index(i)) -> -2 of 24 is 23, deeper than 5
    assert _feature_layers({"vision_feature_layer": [5, -2]}, 24) == 23
    assert _feature_layers({"vision_feature_layer": [-24, -20, -12, -1]}, 27) == 27
    assert _feature_layers({"vision_feature_layer": -2}, 24) == 23
    assert _feature_layers({}, 24) == 24
