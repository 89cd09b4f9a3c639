"""Kimi-VL (vmemplan/models/kimi_vl.py): MoonViT plus the replicated projector and the image budget,
worked by hand against vLLM 0.33.0's vllm/model_executor/models/kimi_vl.py and moonvit.py."""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import GraphContext
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.models.kimi_vl import kimi_vl_image_tokens, moonvit_tower

CONFIG = Path(__file__).resolve().parents[1] / "fixtures/oracle/configs/moonshotai--Kimi-VL-A3B-Instruct.synthetic.json"


def _bytes(tensors) -> int:
    return weight_bytes_per_rank(tensors, model_dtype="bfloat16", allocator_rounding=False).unrounded_bytes


def test_moonvit_tower_by_hand():
    """MoonViT-SO-400M (c 1152, 27 layers, MLP 4304, patch 14, 64 x 64 position table, kernel 2 x 2)
    and the projector to a 2048-wide decoder, bf16, TP 1: patch embed 1152*3*14*14 + 1152 = 678,528;
    position table 4096*1152 = 4,718,592; a layer: LayerNorms 4*1152 + wqkv 3456*1152 + 3456 +
    wo 1152² + 1152 + fc0 4304*1152 + 4304 + fc1 1152*4304 + 1152 = 15,239,504, 27 layers
    411,466,608; final LayerNorm 2,304; projector LayerNorm 2,304 + linear_1 4608² + 4608 +
    linear_2 2048*4608 + 2048 = 30,679,808: 447,545,840 elements = 895,091,680 B."""
    vc = json.loads(CONFIG.read_text())["vision_config"]
    assert _bytes(moonvit_tower(vc, 1, 2048)) == 895_091_680


def test_projector_stays_whole_under_tp():
    """At TP 2 the tower's linears halve but the projector (ReplicatedLinear) does not: the TP 2
    tower is (895,091,680 - projector 61,359,616 - unsharded parts) / 2 + the unsharded parts."""
    vc = json.loads(CONFIG.read_text())["vision_config"]
    projector = 2 * (2304 + 4608 * 4608 + 4608 + 2048 * 4608 + 2048)
    unsharded = 2 * (678_528 + 4_718_592 + 27 * (4608 + 1152 + 1152) + 2304)  # embeds, norms, row biases
    sharded = 895_091_680 - projector - unsharded
    assert _bytes(moonvit_tower(vc, 2, 2048)) == projector + unsharded + sharded // 2


def test_weights_match_vllm():
    """The whole rank at TP 1 is vLLM 0.33's own figure less the W_UK_T/W_UV views the oracle counts
    twice (fixture moonshotai-Kimi-VL-A3B-Instruct.synthetic.tp1: 32,945,339,280 - 113,246,208)."""
    adapter = adapter_for(ModelConfig.from_dict(json.loads(CONFIG.read_text())))
    assert _bytes(adapter.weight_tensors(GraphContext(model_dtype="bfloat16"))) == 32_945_339_280 - 113_246_208


def test_dummy_image_tokens():
    """The 1024² dummy: 73² = 5,329 patches exceed in_token_limit 4096, scale sqrt(4096/5329) gives
    897 px a side, padded to 924 (a multiple of 28): 33 x 33 = 1,089 tokens."""
    assert kimi_vl_image_tokens(1024, 1024, patch_size=14, kernel=(2, 2), in_token_limit=4096) == 1089
