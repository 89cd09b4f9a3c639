"""The MoE activation law per release era (registry cost_model.yaml activation.fused_moe): adjacent
eras never disagree by 2x for the same model, and the 0.28+ figure for Qwen3-30B-A3B is the
hand-computed one of tests/laws/test_activation.py."""

from __future__ import annotations

import pytest

from vmemplan import pipeline
from vmemplan.registry import load_registry
from vmemplan.resolve import PlanInputs, resolve
from vmemplan.sources import load_model_source

#: one release per cost-model era, oldest first
RELEASES = ["0.9.2", "0.10.1.1", "0.11.0", "0.17.0", "0.18.0", "0.20.0", "0.28.0", "0.33.0"]


def _forward(model: str, tp: int, version: str, mnbt: int = 8192) -> int:
    reg = load_registry()
    src = load_model_source(model, bundled_dir=reg.models_dir)
    req = resolve(PlanInputs(model=model, gpu="h200", vllm_version=version, tensor_parallel_size=tp,
                             max_model_len=8192, max_num_batched_tokens=mnbt), registry=reg, source=src)
    return pipeline.overheads(req, pipeline.model_graph(req)).activation.forward_bytes


@pytest.mark.parametrize("model,tp", [("Qwen/Qwen3-30B-A3B", 1), ("openai/gpt-oss-120b", 1),
                                      ("mistralai/Mixtral-8x7B-v0.1", 2), ("deepseek-ai/DeepSeek-V3", 8),
                                      ("Qwen/Qwen3-235B-A22B", 4)])
def test_adjacent_eras_within_2x(model, tp):
    figures = [_forward(model, tp, v) for v in RELEASES]
    for a, b in zip(figures, figures[1:]):
        assert 0.5 < a / b < 2, (model, figures)


def test_qwen3_30b_033_by_hand():
    # 8192 tokens, modular unchunked layout: 640,417,792 B (see tests/laws/test_activation.py)
    assert _forward("Qwen/Qwen3-30B-A3B", 1, "0.33.0") == 640_417_792
