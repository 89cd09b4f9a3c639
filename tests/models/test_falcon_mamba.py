"""Falcon-Mamba (vmemplan/models/mamba_ssm.py::Mamba1; vLLM 0.33.0 mamba.py with model_type
falcon_mamba): the weightless dt/B/C RMSNorms' ones tensors, worked by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

BASE = {
    "architectures": ["FalconMambaForCausalLM"], "model_type": "falcon_mamba", "torch_dtype": "bfloat16",
    "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 3, "state_size": 16,
    "conv_kernel": 4, "time_step_rank": 32, "vocab_size": 1000, "tie_word_embeddings": False,
}


def _bytes(cfg: dict, tp: int) -> dict:
    ctx = GraphContext(model_dtype="bfloat16", tensor_parallel_size=tp)
    return {t.name: t for t in adapter_for(ModelConfig.from_dict(cfg)).weight_tensors(ctx)}


def test_falcon_mamba_keeps_weightless_norm_ones_on_every_rank() -> None:
    for tp in (1, 2):
        ts = _bytes(BASE, tp)
        dt = ts["backbone.layers.mixer.dt_layernorm.weight(ones, not a parameter)"]
        bc = ts["backbone.layers.mixer.b_layernorm+c_layernorm.weight(ones, not a parameter)"]
        # replicated: dt [32] x 3 layers, b and c [16] x 3 layers each -> (32 + 32) * 3 * 2 B = 384 B
        assert (dt.rows, dt.count) == (32, 3) and (bc.rows, bc.count) == (16, 6)


def test_plain_mamba_has_no_bcdt_norms() -> None:
    cfg = dict(BASE, architectures=["MambaForCausalLM"], model_type="mamba")
    assert not any("layernorm" in name for name in _bytes(cfg, 1))
