"""LLaVA-NeXT (vmemplan/models/llava_next.py), worked by hand against vLLM 0.33.0's llava_next.py."""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import GraphContext
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.models.llava_next import anyres_image_tokens

CONFIG = Path(__file__).resolve().parents[1] / "fixtures/oracle/configs/llava-hf--llava-v1.6-mistral-7b-hf.transcribed.json"
PINS = [(336, 672), (672, 336), (672, 672), (1008, 336), (336, 1008)]


def test_llava_next_weights_by_hand():
    """llava-v1.6-mistral-7b, fp16, TP 1.  The text_config keeps only what differs from
    MistralConfig (h 4096, 32 layers, 32/8 heads): embed + lm_head 2 x 32064*4096, a layer
    6144*4096 + 4096*4096 + 28672*4096 + 4096*14336 + 2*4096 = 218,112,000, final norm 4096:
    7,242,256,384.  CLIP-L/336 to layer -2 (23 of 24 layers, 12,596,224 each) + class 1024 +
    patch 1024*3*14*14 + positions 577*1024 + pre-LN 2048: 290,909,184.  Projector
    4096*1024 + 4096 + 4096*4096 + 4096 = 20,979,712; image_newline 4096.  7,554,149,376
    elements * 2 B = 15,108,298,752 B, + rotary 32768 x 128 x 2 B + CLIP position_ids 577 int64
    + 32 x 16 B of scales = 15,116,692,488 B (vLLM 0.33's own figure, fixture
    llava-hf-llava-v1.6-mistral-7b-hf.transcribed.tp1)."""
    adapter = adapter_for(ModelConfig.from_dict(json.loads(CONFIG.read_text())))
    ctx = GraphContext(model_dtype="float16", max_model_len=32768)
    tensors = adapter.weight_tensors(ctx)
    assert [t for t in tensors if t.name == "image_newline"][0].elements == 4096
    got = weight_bytes_per_rank(tensors, model_dtype="float16", allocator_rounding=False).unrounded_bytes
    assert got == 15_116_692_488


def test_anyres_tokens_of_the_largest_pinpoint():
    """672 x 672 on 336-px tiles (24 x 24 patches): a 2 x 2 grid = 48 x 48 features, + 48 newlines,
    + the 576 base tokens = 2,928; a 1008 x 336 image: 72 x 24 + 72 + 576 = 2,376."""
    assert anyres_image_tokens(672, 672, pinpoints=PINS, tile=336, grid=24, base=576) == 2928
    assert anyres_image_tokens(1008, 336, pinpoints=PINS, tile=336, grid=24, base=576) == 2376
    adapter = adapter_for(ModelConfig.from_dict(json.loads(CONFIG.read_text())))
    assert adapter.max_tokens_per_item(adapter.config, GraphContext(model_dtype="float16")) == {"image": 2928}
