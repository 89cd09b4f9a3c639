"""A bare ``nn.Parameter`` assigned inside ``_mark_tower_model`` survives a zero limit
(vllm/model_executor/models/interfaces.py::_mark_tower_model, 0.33.0: ``no_init_weights``
stands in only for child modules): LLaVA-NeXT's and LLaVA-OneVision's ``image_newline``
(llava_next.py / llava_onevision.py) stays with every limit at 0 (what ``--language-model-only`` sets); the oracle's
``--language-model-only`` run of the OneVision fixture config measured 24,108,089,856 B, 8,192 B
(a 4,096-wide bf16 image_newline) above the language model alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from vmemplan.api import plan_with_request
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.pipeline import graph_context

CONFIGS = Path(__file__).parents[1] / "fixtures" / "oracle" / "configs"


def _unrounded(model: str, **flags: object) -> tuple[int, set[str]]:
    req, _ = plan_with_request(model=model, gpu="h100", kv_cache_memory=42949672960, max_model_len=32768, **flags)
    ts = req.adapter.weight_tensors(graph_context(req, 0))
    return weight_bytes_per_rank(ts, model_dtype=req.dtype, scheme=req.quant_scheme,
                                 allocator_rounding=False).unrounded_bytes, {t.name for t in ts}


def test_onevision_language_model_only_matches_the_oracle() -> None:
    cfg = str(CONFIGS / "llava-hf--LlavaOnevisionConfig-defaults.synthetic.json")
    got, names = _unrounded(cfg, limit_mm_per_prompt={"image": 0, "video": 0})
    assert "image_newline" in names and not any(n.startswith("vision_tower") for n in names)
    assert got == 24_108_089_856


@pytest.mark.parametrize("cfg", ["llava-hf--llava-v1.6-mistral-7b-hf.transcribed.json"])
def test_llava_next_keeps_image_newline_without_its_tower(cfg: str) -> None:
    full, _ = _unrounded(str(CONFIGS / cfg))
    lm_only, names = _unrounded(str(CONFIGS / cfg), limit_mm_per_prompt={"image": 0, "video": 0})
    assert "image_newline" in names and not any(n.startswith("vision_tower") for n in names)
    assert lm_only < full
