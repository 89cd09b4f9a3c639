"""Phi-3-vision (vmemplan/models/phi3v.py), worked by hand against vLLM 0.33.0's phi3v.py."""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import GraphContext
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.models.phi3v import phi3v_image_tokens

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures/oracle/configs"


def _adapter(name: str):
    return adapter_for(ModelConfig.from_dict(json.loads((CONFIGS / name).read_text())))


def test_phi3v_weights_by_hand():
    """Phi-3-vision-128k, bf16, TP 1.  Decoder (LlamaForCausalLM on the Phi-3 config): embed +
    lm_head 2 x 32064*3072, 32 layers of 9216*3072 + 3072*3072 + 16384*3072 + 3072*8192 + 2*3072,
    final norm: 3,821,079,552.  The tower's own embed_tokens 32064*3072 = 98,500,608; CLIP-L/336
    to layer -2 (23 layers): 290,909,184; glb_GN + sub_GN 2*4096; img_projection 3072*4096 +
    3072*3072 + 2*3072 = 22,026,240.  4,232,523,776 elements * 2 B = 8,465,047,552 B, + the
    LongRoPE table (4096 + 131072) x 96 x 2 B = 25,952,256 B + CLIP position_ids 577 x 8 B +
    32 x 16 B of scales = 8,491,004,936 B (vLLM 0.33's own figure, fixture
    microsoft-Phi-3-vision-128k-instruct.transcribed.oracle-phi3.tp1)."""
    for name in ("microsoft--Phi-3-vision-128k-instruct.transcribed.json",
                 "microsoft--Phi-3-vision-128k-instruct.transcribed.oracle-phi3.json"):
        adapter = _adapter(name)
        ctx = GraphContext(model_dtype="bfloat16", max_model_len=32768)
        got = weight_bytes_per_rank(adapter.weight_tensors(ctx), model_dtype="bfloat16",
                                    allocator_rounding=False).unrounded_bytes
        assert got == 8_491_004_936, name


def test_phi3v_hd_transform_tokens():
    """vLLM's largest dummy image, 8000 x 50 (h:w = 16:1): transposed, ratio 160, the largest
    scale with scale * ceil(scale / 160) <= 16 crops is 16: 5376 x 336 after padding, 16 crops in
    16 rows: (16 + 1) * 144 + 1 + (16 + 1) * 12 = 2,653 tokens.  One 336 x 336 crop budget:
    (1 + 1) * 144 + 1 + 2 * 12 = 313."""
    assert phi3v_image_tokens(50, 8000) == 2653
    assert phi3v_image_tokens(336, 336, num_crops=1) == 313
    adapter = _adapter("microsoft--Phi-3-vision-128k-instruct.transcribed.json")
    assert adapter.max_tokens_per_item(adapter.config, GraphContext(model_dtype="bfloat16")) == {"image": 2653}
