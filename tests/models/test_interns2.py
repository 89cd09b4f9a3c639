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
