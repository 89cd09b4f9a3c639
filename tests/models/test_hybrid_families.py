"""Worked examples for the recurrent families added in models/granite_hybrid.py, falcon_h1.py,
mamba_ssm.py and lfm2.py (figures computed by hand from vLLM 0.33.0's shape rules)."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.falcon_h1 import FalconH1
from vmemplan.models.lfm2 import Lfm2, lfm2_ff_dim
from vmemplan.models.mamba_ssm import Mamba1


def test_lfm2_feed_forward_width_is_two_thirds_rounded_up() -> None:
    # Lfm2MLP: int(2 * 12288 / 3) = 8192, x1.0, already a multiple of 256
    assert lfm2_ff_dim(12288, 256, True, 1.0) == 8192
    # int(2 * 10000 / 3) = 6666 -> rounded up to 256: 6912
    assert lfm2_ff_dim(10000, 256, True, None) == 6912
    assert lfm2_ff_dim(10000, 256, False, 1.0) == 10000


def test_lfm2_short_conv_state_is_one_conv_tensor() -> None:
    cfg = ModelConfig.from_dict({
        "architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "hidden_size": 2048, "num_hidden_layers": 4,
        "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 65536, "intermediate_size": 12288,
        "conv_L_cache": 3, "conv_dim": 2048, "layer_types": ["conv", "full_attention", "conv", "conv"],
        "max_position_embeddings": 128000, "torch_dtype": "bfloat16",
    })
    a = Lfm2(cfg)
    assert a.layer_kinds() == ("mamba", "attention", "mamba", "mamba")
    (conv,) = a.mamba_state(GraphContext(tensor_parallel_size=2, model_dtype="bfloat16"))
    # (conv_L_cache - 1) x conv_dim / tp, bf16: 2 x 1024 x 2 B
    assert conv.shape == (2, 1024) and conv.nbytes == 4096


def test_falcon_h1_names_its_mamba_layers_after_the_attention_layers() -> None:
    cfg = ModelConfig.from_dict({
        "architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1", "hidden_size": 1024,
        "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
        "vocab_size": 32784, "intermediate_size": 2048, "mamba_d_ssm": 1536, "mamba_n_heads": 24,
        "mamba_d_head": 64, "mamba_d_state": 128, "mamba_d_conv": 4, "mamba_n_groups": 1,
        "max_position_embeddings": 16384, "torch_dtype": "bfloat16",
    })
    specs = FalconH1(cfg).kv_cache_specs(GraphContext(model_dtype="bfloat16", max_model_len=16384, block_size=16))
    # FalconH1ParallelHybrid: attention at model.layers.{i}.attn, SSM at model.{L + i}.mixer
    assert sorted(specs) == ["model.2.mixer", "model.3.mixer", "model.layers.0.attn", "model.layers.1.attn"]


def test_mamba1_state_page_and_tied_head_default() -> None:
    cfg = ModelConfig.from_dict({
        "architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 768, "num_hidden_layers": 24,
        "intermediate_size": 1536, "state_size": 16, "conv_kernel": 4, "time_step_rank": 48,
        "vocab_size": 50280, "torch_dtype": "bfloat16",
    })
    a = Mamba1(cfg)
    state = a.mamba_state(GraphContext(model_dtype="bfloat16"))
    # conv 3 x 1536 + ssm 1536 x 16, bf16: (4608 + 24576) x 2 B
    assert sum(t.nbytes for t in state) == 58368
    names = {t.name for t in a.weight_tensors(GraphContext(model_dtype="bfloat16"))}
    assert "lm_head" not in names  # MambaConfig ties the head by default
    assert a.default_max_model_len() == 2048  # no length key: vLLM's assumed 2048
