"""``--mm-encoder-tp-mode data`` keeps the tower whole per rank only for a model whose vLLM
class declares ``supports_encoder_tp_data``; for any other, vLLM runs ``weights``
(vllm/config/model.py; interfaces.py default False, 0.33.0)."""

from __future__ import annotations

import pytest

from vmemplan.api import plan_from_flags
from vmemplan.models.multimodal import VisionEncoderMixin


def _weights(model: str, mode: str) -> int:
    plan = plan_from_flags(model=model, gpu="h100", tensor_parallel_size=2, mm_encoder_tp_mode=mode)
    return plan.per_rank.weights_bytes


def test_a_declaring_model_keeps_its_tower_whole_in_data_mode() -> None:
    model = "Qwen/Qwen2.5-VL-7B-Instruct"  # qwen2_5_vl.py declares it
    assert _weights(model, "data") > _weights(model, "weights")


@pytest.mark.parametrize("model", ["mistralai/Mistral-Small-3.1-24B-Instruct-2503", "google/gemma-3-27b-it"])
def test_any_other_model_runs_weights_mode(model: str) -> None:
    assert _weights(model, "data") == _weights(model, "weights")


def test_the_default_is_vllms() -> None:
    assert VisionEncoderMixin.supports_encoder_tp_data is False
