"""The encoder budget of vLLM's encoder-decoder models (Whisper, Cohere ASR, Nemotron Parse): the
model's own per-prompt cap (``get_supported_mm_limits``) combined with ``--limit-mm-per-prompt``
as vllm/multimodal/processing/context.py::BaseProcessingInfo.allowed_mm_limits does
(``min(user, supported)``), and chunked prefill off (vllm/config/model.py::
is_chunked_prefill_supported), which raises an unset ``--max-num-batched-tokens`` to
``max_model_len`` (vllm/engine/arg_utils.py).  Figures worked by hand from those functions."""

from __future__ import annotations

from pathlib import Path

import pytest

from vmemplan.api import plan_with_request
from vmemplan.laws import multimodal as mm_law
from vmemplan.pipeline import graph_context

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "oracle" / "configs"


def _budget(stem: str, **flags):
    req, _plan = plan_with_request(model=str(CONFIGS / f"{stem}.json"), gpu="H200", tensor_parallel_size=1,
                                   kv_cache_memory=42949672960, **flags)
    return req, req.adapter.multimodal_profile(graph_context(req, 0)).budget


def test_allowed_limits_caps_the_user_limit() -> None:
    assert mm_law.allowed_limits((("audio", 5),), {"audio": 1}) == {"audio": 1}
    assert mm_law.allowed_limits((), {"audio": 1, "image": None}) == {"audio": 1, "image": 999}
    assert mm_law.allowed_limits((("audio", 0),), {"audio": 1}) == {"audio": 0}


def test_whisper_one_clip_per_prompt_whatever_the_flag() -> None:
    # WhisperProcessingInfo.get_supported_mm_limits {"audio": 1}: min(5, 1) = 1.  448 // 1500 = 0 would
    # give max(1, 0) = 1 anyway; the batch is min(8192 // 1500, min(1024, 8192 // 1500) · 1) = 5 clips
    req, b = _budget("openai--whisper-large-v3.transcribed", limit_mm_per_prompt='{"audio": 5}')
    assert (req.max_num_batched_tokens, b.max_items_per_prompt, b.max_items_per_batch) == (8192, {"audio": 1}, {"audio": 5})


@pytest.mark.parametrize("flags, per_batch", [({}, 18), ({"max_num_seqs": 4, "limit_mm_per_prompt": '{"audio": 5}'}, 4)])
def test_cohere_asr_cap_bounds_the_profiled_clips(flags: dict, per_batch: int) -> None:
    # 438 tokens a 35 s clip; max_model_len 1024 // 438 = 2 clips would fit a prompt, the model
    # caps it at 1: with --max-num-seqs 4 the profile takes 4 · 1 clips (4 · 2 = 8 uncapped);
    # by default min(8192 // 438, min(1024, 8192 // 438) · 1) = 18
    _req, b = _budget("CohereLabs--cohere-transcribe-03-2026.derived", **flags)
    assert b.max_tokens_per_item == {"audio": 438}
    assert (b.max_items_per_prompt, b.max_items_per_batch) == ({"audio": 1}, {"audio": per_batch})


def test_nemotron_parse_unchunked_batch_tokens_and_one_image() -> None:
    # chunked prefill off: max_num_batched_tokens = max(max_model_len 9000, 8192) (the oracle's
    # fixture has 9000); one 2048 x 1664 page of 128 · 26 + 1 = 3329 tokens a prompt, not 9000 // 3329 = 2
    req, b = _budget("nvidia--NVIDIA-Nemotron-Parse-v1.2.derived")
    assert (req.max_model_len, req.max_num_batched_tokens) == (9000, 9000)
    assert b.max_tokens_per_item == {"image": 3329}
    assert (b.max_items_per_prompt, b.max_items_per_batch, b.budget_tokens) == ({"image": 1}, {"image": 2}, 9000)
