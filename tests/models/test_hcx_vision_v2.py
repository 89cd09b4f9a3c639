"""HCXVisionV2ForCausalLM (vLLM 0.33.0 hyperclovax_vision_v2.py): worked examples by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

CFG = {
    "architectures": ["HCXVisionV2ForCausalLM"], "model_type": "hyperclovax_vision_v2", "tie_word_embeddings": True,
    "text_config": {"model_type": "hyperclovax", "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512,
                    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 64,
                    "max_position_embeddings": 1024, "use_post_norm": True, "tie_word_embeddings": False},
    "vision_config": {"model_type": "qwen2_5_vl_vision", "depth": 2, "hidden_size": 128, "intermediate_size": 256,
                      "num_heads": 2, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
                      "out_hidden_size": 192},
}


def test_hcx_vision_v2_by_hand() -> None:
    a = adapter_for(ModelConfig.from_dict(CFG))
    ts = {t.name: t for t in a.weight_tensors(GraphContext())}
    # the projector: Linear(out_hidden 192 → text hidden 256) with a bias, replicated
    assert (ts["mm_projector"].rows, ts["mm_projector"].cols) == (256, 192) and ts["mm_projector.bias"].rows == 256
    # the top-level tie_word_embeddings wins: no separate lm_head
    assert "lm_head" not in ts
    # HyperCLOVAX's post norms: four per layer
    assert any(t.count == 4 * 2 for n, t in ts.items() if "layernorm" in n or "norm" in n)
    assert any(n.startswith("blocks.") or "patch_embed" in n for n in ts)
