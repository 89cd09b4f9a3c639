"""Intern-S2-Preview (vmemplan/models/interns2.py): Qwen3.5-MoE's tensors, but the GDN recurrent state
stays at the model dtype, since vLLM's mamba_ssm_dtype hook (config.py::Qwen3_5ForConditionalGenerationConfig)
is registered for the Qwen3.5 architecture names only."""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

QWEN35_MOE = Path(__file__).resolve().parents[2] / "registry/models/Qwen--Qwen3.5-35B-A3B.json"


def test_intern_s2_preview_keeps_the_model_dtype_for_the_recurrent_state():
    raw = json.loads(QWEN35_MOE.read_text())
    assert raw["text_config"]["mamba_ssm_dtype"] == "float32"
    ctx = GraphContext(model_dtype="bfloat16", tensor_parallel_size=1)
    qwen = adapter_for(ModelConfig.from_dict(raw))
    intern = adapter_for(ModelConfig.from_dict({**raw, "architectures": ["InternS2PreviewForConditionalGeneration"]}))
    assert qwen.state_dtype_pair(ctx) == ("bfloat16", "float32")
    assert intern.state_dtype_pair(ctx) == ("bfloat16", "bfloat16")
    # same tensors: 32 value heads x 128 x 128 recurrent state, bf16 = 1,048,576 B a layer at TP 1
    assert intern.weight_tensors(ctx) == qwen.weight_tensors(ctx)


def test_intern_s2_mobius_shares_num_blocks_expert_banks_and_a_4x_mrope_cache():
    raw = json.loads(QWEN35_MOE.read_text())
    raw = {**raw, "architectures": ["InternS2MobiusForConditionalGeneration"],
           "text_config": {**raw["text_config"], "num_blocks": 4}}
    ctx = GraphContext(model_dtype="bfloat16", tensor_parallel_size=2)
    ts = {t.name: t for t in adapter_for(ModelConfig.from_dict(raw)).weight_tensors(ctx)}
    assert "mlp.gate" not in ts and "mlp.experts.w13" not in ts
    # 4 banks of 256 experts: w13 [256, 2 x 512 / 2, 2048] bf16 = 536,870,912 B a bank; one router per bank
    w13 = ts["meta_mlp.experts.w13"]
    assert w13.rows * w13.cols * w13.count * 2 == 4 * 536_870_912
    assert ts["meta_mlp.gate"].count == 4 and ts["mlp.shared_expert_gate"].count == 40
    # M-RoPE cache: 262,144 positions x factor 4 rows of rotary_dim 64 (partial 0.25 of 256), bf16 = 134,217,728 B
    rope = ts["rotary_emb.cos_sin_cache"]
    assert rope.rows * rope.cols * 2 == 134_217_728
