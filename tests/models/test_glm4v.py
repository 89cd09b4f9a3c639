"""GLM-4.xV (vmemplan/models/glm4v.py): the GLM-4V vision tower and its image budget, worked by hand
against vLLM 0.33.0's vllm/model_executor/models/glm4_1v.py."""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import GraphContext
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.models.glm4v import glm4v_image_tokens, glm4v_tower

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures/oracle/configs"


def _bytes(tensors) -> int:
    return weight_bytes_per_rank(tensors, model_dtype="bfloat16", allocator_rounding=False).unrounded_bytes


def test_glm45v_tower_by_hand():
    """GLM-4.5V's tower (c 1536, 24 blocks, 12 heads, out 4096, merger MLP 10944, patch 14, image 336),
    bf16, TP 1: patch embed 1536*3*2*14*14 + 1536 = 1,807,872; position table 576*1536 = 884,736;
    rotary cache 8192*64 = 524,288; a block: norms 3,072 + qkv 4608*1536 + proj 1536*1536 +
    gate_up 8192*1536 + down 1536*4096 = 28,314,624, 24 blocks 679,550,976; post norms 3,072;
    downsample 4096*1536*4 + 4096 = 25,169,920; merger proj 4096² + LayerNorm 8,192 +
    gate_up 21888*4096 + down 4096*10944 = 151,265,280: 859,206,144 elements = 1,718,412,288 B,
    + position_ids 576 int64 (4,608 B) = 1,718,416,896 B."""
    vc = json.loads((CONFIGS / "zai-org--GLM-4.5V.transcribed.json").read_text())["vision_config"]
    assert _bytes(glm4v_tower(vc, 1)) == 1_718_416_896


def test_glm45v_weights_match_vllm_and_drop_the_tower():
    """The whole rank at TP 1 is vLLM 0.33's own figure (fixture zai-org-GLM-4.5V.transcribed.tp1);
    limiting image and video to 0 drops exactly the tower."""
    raw = json.loads((CONFIGS / "zai-org--GLM-4.5V.transcribed.json").read_text())
    adapter = adapter_for(ModelConfig.from_dict(raw))
    full = _bytes(adapter.weight_tensors(GraphContext(model_dtype="bfloat16")))
    assert full == 215_503_672_032
    text_only = GraphContext(model_dtype="bfloat16", limit_mm_per_prompt=(("image", 0), ("video", 0)))
    assert full - _bytes(adapter.weight_tensors(text_only)) == 1_718_416_896


def test_glm4v_largest_image_tokens():
    """The 9999999² dummy at Glm4vImageProcessor's default longest_edge 28²*15000 = 11,760,000 pixels,
    counted as two frames (temporal patch 2): side floor(sqrt(11,760,000 / 2) / 28) * 28 = 2408,
    i.e. 172 x 172 patches, / merge² 4 = 7,396 tokens."""
    assert glm4v_image_tokens(patch_size=14, merge_size=2, temporal_patch_size=2, max_pixels=11_760_000) == 7396
