"""MiniCPMV (vLLM 0.33.0 minicpmv.py, idefics2_vision_model.py, layers/resampler.py): the
vision tower and resampler worked by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

CFG = {
    "architectures": ["MiniCPMV"], "model_type": "minicpmv", "version": 2.6, "query_num": 4,
    "drop_vision_last_layer": True, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
    "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 1024,
    "tie_word_embeddings": False,
    "vision_config": {"hidden_size": 64, "image_size": 56, "intermediate_size": 128, "num_attention_heads": 4,
                      "num_hidden_layers": 3, "patch_size": 14},
}


def _elements(cfg: dict, kind: str, **ctx: object) -> int:
    a = adapter_for(ModelConfig.from_dict(cfg))
    return sum(t.rows * t.cols * t.count for t in a.weight_tensors(GraphContext(**ctx))
               if t.kind == kind and (kind == "encoder" or t.name.startswith("resampler.")))


def test_minicpmv_tower_and_resampler_by_hand() -> None:
    a = adapter_for(ModelConfig.from_dict(CFG))
    assert type(a).__name__ == "MiniCPMV[Qwen2]"
    # vpm: conv 64·3·14·14 + bias 64, positions (56/14)² = 16 × 64 = 1,024, post-LayerNorm 128
    emb = 37_632 + 64 + 1_024 + 128
    # a layer: qkv 3·64·64 + 192, out 64·64 + 64, fc1 128·64 + 128, fc2 64·128 + 64, 2 LayerNorms 256;
    # drop_vision_last_layer keeps 2 of the 3
    layer = 12_288 + 192 + 4_096 + 64 + 8_192 + 128 + 8_192 + 64 + 256
    # resampler (e = 256, kv 64): query 4·256, kv_proj 256·64, in_proj 768·256 + 768, out_proj 256·256 + 256,
    # three LayerNorms 6·256, proj 256·256
    res = 1_024 + 16_384 + 196_608 + 768 + 65_536 + 256 + 1_536 + 65_536
    assert _elements(CFG, "encoder") == emb + 2 * layer + res
    # the host-built 70 × 70 sin-cos table, moved to the GPU after loading
    assert _elements(CFG, "buffer") == 70 * 70 * 256
    # TP 2 splits the tower's linears (not the resampler)
    layer2 = 6_144 + 96 + 2_048 + 64 + 4_096 + 64 + 4_096 + 64 + 256
    assert _elements(CFG, "encoder", tensor_parallel_size=2) == emb + 2 * layer2 + res
    # an image: 9 slices + the source, query_num tokens each
    assert a.max_tokens_per_item(a.config, GraphContext())["image"] == 10 * 4


def test_minicpmv_4_5_temporal_table() -> None:
    cfg = {**CFG, "version": 4.5, "head_dim": 128}
    a = adapter_for(ModelConfig.from_dict(cfg))
    assert type(a).__name__ == "MiniCPMV[Qwen3]"
    assert _elements(cfg, "buffer") == 70 * 70 * 256 + 36_000 * 256
