"""InternVLChatModel / InternVLForConditionalGeneration (vLLM 0.33.0 internvl.py, intern_vit.py,
interns1.py, interns1_vit.py): the InternViT tower and projector, worked by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

TEXT = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 1000, "hidden_size": 32,
        "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "max_position_embeddings": 1024}
CHAT = {
    "architectures": ["InternVLChatModel"], "model_type": "internvl_chat", "downsample_ratio": 0.5,
    "force_image_size": 56, "select_layer": -1, "max_dynamic_patch": 12, "dynamic_image_size": True,
    "use_thumbnail": True, "llm_config": TEXT,
    "vision_config": {"model_type": "intern_vit_6b", "hidden_size": 64, "num_attention_heads": 4,
                      "intermediate_size": 128, "num_hidden_layers": 2, "patch_size": 14, "image_size": 56,
                      "qkv_bias": True, "qk_normalization": False, "norm_type": "layer_norm"},
}


def _encoder_elements(cfg: dict, **ctx: object) -> int:
    a = adapter_for(ModelConfig.from_dict(cfg))
    return sum(t.rows * t.cols * t.count for t in a.weight_tensors(GraphContext(**ctx)) if t.kind == "encoder")


def test_intern_vit_chat_tower_by_hand() -> None:
    # embeddings: class 64 + conv 64·3·14·14 = 37,632 + bias 64 + positions (56/14)²+1 = 17 rows × 64 = 1,088
    emb = 64 + 37_632 + 64 + 1_088
    # a layer at TP 1: qkv 3·64·64 + 192, proj 64·64 + 64, fc1 128·64 + 128, fc2 64·128 + 64,
    # two LayerNorms 2·(64+64), ls1/ls2 2·64 = 33,600
    layer = 12_288 + 192 + 4_096 + 64 + 8_192 + 128 + 8_192 + 64 + 256 + 128
    # mlp1: LayerNorm(64·4) weight+bias 512, Linear(256→32) 8,192 + 32, Linear(32→32) 1,024 + 32
    mlp1 = 512 + 8_192 + 32 + 1_024 + 32
    assert _encoder_elements(CHAT) == emb + 2 * layer + mlp1 == 115_840
    # TP 2 splits qkv (6,144 + 96), proj (64·32), fc1 (64·64 + 64), fc2 (64·64): 17,056 a layer
    layer2 = 6_144 + 96 + 2_048 + 64 + 4_096 + 64 + 4_096 + 64 + 256 + 128
    assert _encoder_elements(CHAT, tensor_parallel_size=2) == emb + 2 * layer2 + mlp1 == 82_752
    # --mm-encoder-tp-mode data keeps the tower whole on every rank
    assert _encoder_elements(CHAT, tensor_parallel_size=2, mm_encoder_tp_mode="data") == 115_840
    # every modality limited to 0: no tower
    assert _encoder_elements(CHAT, limit_mm_per_prompt=(("image", 0), ("video", 0))) == 0


def test_internvl_language_model_and_image_tokens() -> None:
    a = adapter_for(ModelConfig.from_dict(CHAT))
    assert type(a).__name__ == "ChatTower[Qwen2]"
    # 12 tiles + the thumbnail, (56/14)² · 0.5² = 4 tokens each
    assert a.max_tokens_per_item(a.config, GraphContext())["image"] == 13 * 4


def test_interns1_vit_hf_tower_by_hand() -> None:
    hf = {"architectures": ["InternVLForConditionalGeneration"], "model_type": "internvl", "downsample_ratio": 0.5,
          "text_config": TEXT, "tie_word_embeddings": False,
          "vision_config": {"model_type": "internvl_vision", "hidden_size": 64, "num_attention_heads": 4,
                            "intermediate_size": 128, "num_hidden_layers": 2, "patch_size": [14, 14],
                            "image_size": [56, 56], "attention_bias": True, "use_qk_norm": False,
                            "norm_type": "layer_norm", "use_mean_pooling": True}}
    emb = 64 + 37_632 + 64 + 1_088  # cls_token, conv + bias, 17 positions
    # q/k/v 3·(64·64 + 64) and projection_layer 64·64 + 64, never split; fc1/fc2 split over TP
    attn = 3 * (4_096 + 64) + 4_096 + 64
    proj = 512 + 8_192 + 32 + 1_024 + 32
    assert _encoder_elements(hf) == emb + 2 * (attn + 8_192 + 128 + 8_192 + 64 + 256 + 128) + proj
    assert _encoder_elements(hf, tensor_parallel_size=2) == emb + 2 * (attn + 4_096 + 64 + 4_096 + 64 + 256 + 128) + proj
