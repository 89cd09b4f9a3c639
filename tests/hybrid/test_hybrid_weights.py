"""Weights of the hybrid adapters against published parameter counts and TP sharding."""

from __future__ import annotations

import json

import pytest

from vmemplan.core.errors import UsageError
from vmemplan.laws.weights import parameter_count, weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.core.graph import GraphContext

from tests.conftest import CONFIGS


def _adapter(name: str):
    return adapter_for(ModelConfig.from_dict(json.loads((CONFIGS / f"{name}.json").read_text())))


def test_kimi_linear_matches_checkpoint_tensor_sum_exactly():
    # /work/shared/corpus/configs/SOURCES.md: the model report's tensor sum is 49,122,681,728 params
    assert _adapter("moonshotai--Kimi-Linear-48B-A3B-Instruct").total_params() == 49_122_681_728


@pytest.mark.parametrize(
    "name, published_billions, ndigits",
    [
        # SOURCES.md: "HF shows about 51.6B" (model card: 52B total)
        ("ai21labs--Jamba-v0.1", 51.6, 1),
        # SOURCES.md: "about 31.6B total" (NVIDIA card)
        ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 31.6, 1),
        # model name / card: 56B
        ("nvidia--Nemotron-H-56B-Base-8K", 56, 0),
        # model card: 80B in total (the MTP layer belongs to the drafter, not counted)
        ("Qwen--Qwen3-Next-80B-A3B-Thinking", 80, 0),
        # name: 35B (language model only; the vision tower is not in these tensors)
        ("Qwen--Qwen3.5-35B-A3B", 35, 0),
    ],
)
def test_published_parameter_counts(name, published_billions, ndigits):
    assert round(_adapter(name).total_params() / 1e9, ndigits) == published_billions


def test_nemotron_h_tp8_shards_all_but_the_norms():
    # Every tensor of Nemotron-H-56B splits evenly over 8 ranks (64 heads, 8 KV heads, 256 Mamba
    # heads, 8 groups, vocab 131,072 already a multiple of 64) except the 118 layer norms and the
    # final norm (8,192 each): 8 * tp8 - tp1 = 7 * 119 * 8,192
    a = _adapter("nvidia--Nemotron-H-56B-Base-8K")
    tp1 = parameter_count(a.weight_tensors(GraphContext(tensor_parallel_size=1)))
    tp8 = parameter_count(a.weight_tensors(GraphContext(tensor_parallel_size=8)))
    assert 8 * tp8 - tp1 == 7 * 119 * 8192


def test_jamba_mamba_mixer_is_never_quantized_and_a_is_fp32():
    a = _adapter("ai21labs--Jamba-v0.1")
    tensors = {t.name: t for t in a.weight_tensors(GraphContext())}
    assert not tensors["mixer.in_proj"].quantizable and not tensors["mixer.x_proj"].quantizable
    assert tensors["feed_forward.experts.w13"].quantizable
    # A: 28 layers * 8,192 * 16 fp32 = 14,680,064 bytes, priced at 4 bytes
    wb = weight_bytes_per_rank([tensors["mixer.A"]], model_dtype="bfloat16")
    assert wb.total_bytes == 28 * 8192 * 16 * 4


def test_expert_parallel_moves_whole_experts():
    a = _adapter("Qwen--Qwen3-Next-80B-A3B-Thinking")
    ep = {t.name: t for t in a.weight_tensors(GraphContext(tensor_parallel_size=8, enable_expert_parallel=True))}
    tp = {t.name: t for t in a.weight_tensors(GraphContext(tensor_parallel_size=8))}
    # EP8: 512 / 8 = 64 whole experts per layer; TP8: 512 experts of intermediate 512 / 8 = 64
    assert ep["mlp.experts.w13"].count == 64 * 48 and ep["mlp.experts.w13"].rows == 2 * 512
    assert tp["mlp.experts.w13"].count == 512 * 48 and tp["mlp.experts.w13"].rows == 2 * 64
    assert ep["mlp.experts.w13"].elements == tp["mlp.experts.w13"].elements


def test_bad_tensor_parallel_sizes_are_refused():
    with pytest.raises(UsageError):
        _adapter("Qwen--Qwen3-Next-80B-A3B-Thinking").validate_parallel(GraphContext(tensor_parallel_size=3))
    with pytest.raises(UsageError):
        _adapter("nvidia--Nemotron-H-56B-Base-8K").validate_parallel(GraphContext(tensor_parallel_size=3))


def test_qwen35_conditional_generation_uses_text_config_and_fp32_state():
    a = _adapter("Qwen--Qwen3.5-27B")
    assert a.layer_kinds().count("attention") == 16 and a.layer_kinds().count("mamba") == 48
    ctx = GraphContext(sm_major=9)
    conv, ssm = a.mamba_state(ctx)
    # value heads 48: ssm (48, 128, 128) in float32 from mamba_ssm_dtype
    assert ssm.shape == (48, 128, 128) and ssm.dtype == "float32"
    assert conv.shape == (3, 2 * 16 * 128 + 48 * 128) and conv.dtype == "bfloat16"
    assert a.notes()
