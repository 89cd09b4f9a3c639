"""Nemotron-H Puzzle (vmemplan/models/nemotron_h_puzzle.py; vLLM 0.33.0 nemotron_h.py reading
``get_nemotron_h_config_for_layer``): per-layer block configs, worked by hand."""

from __future__ import annotations

import pytest

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.models.nemotron_h_puzzle import NemotronHPuzzle

CFG = {
    "architectures": ["NemotronHPuzzleForCausalLM"], "model_type": "nemotron_h_puzzle", "torch_dtype": "bfloat16",
    "hidden_size": 256, "vocab_size": 1024, "num_hidden_layers": 4, "hybrid_override_pattern": "M*E-",
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 512,
    "mamba_num_heads": 8, "mamba_head_dim": 32, "n_groups": 2, "ssm_state_size": 16, "conv_kernel": 4,
    "n_routed_experts": 8, "moe_intermediate_size": 128, "num_experts_per_tok": 2, "n_shared_experts": 1,
    "moe_shared_expert_intermediate_size": 256, "tie_word_embeddings": False,
    "block_configs": [{"block_type": "mamba"}, {"block_type": "attention"},
                      {"block_type": "moe", "n_routed_experts": 4, "moe_intermediate_size": 96},
                      {"block_type": "mlp", "intermediate_size": 384}],
}


def _tensors(cfg: dict, tp: int = 1) -> list:
    adapter = adapter_for(ModelConfig.from_dict(cfg))
    assert isinstance(adapter, NemotronHPuzzle)
    return adapter.weight_tensors(GraphContext(model_dtype="bfloat16", tensor_parallel_size=tp))


def test_block_config_sets_the_layer_moe_and_mlp_shapes() -> None:
    ts = {t.name: t for t in _tensors(CFG)}
    # the E layer: 4 experts (not 8) of width 96 (not 128) -> router [4, 256]
    assert ts["mixer.gate"].rows == 4
    w2 = [t for t in _tensors(CFG) if "experts" in t.name and "shared" not in t.name]
    # relu2 experts: w13 = up only [4, 96, 256] and w2 [4, 256, 96]: 2 * 4 * 96 * 256 * 2 B = 393,216 B
    assert sum(t.elements for t in w2) * 2 == 393_216
    # the '-' layer: up/down of 384 (not 512)
    assert ts["mixer.up_proj"].rows == 384


def test_attention_block_override_is_refused() -> None:
    cfg = dict(CFG, block_configs=[*CFG["block_configs"][:1], {"block_type": "attention", "num_key_value_heads": 4},
                                   *CFG["block_configs"][2:]])
    with pytest.raises(ModelConfigError):
        adapter_for(ModelConfig.from_dict(cfg))
