"""DeepSeek-VL2 (vmemplan/models/deepseek_vl2.py): timm's SigLIP-SO400M, the MLP projector, the
multi-head-attention DeepSeek-V2 decoder of -tiny and the image budget, worked by hand against vLLM
0.33.0's vllm/model_executor/models/deepseek_vl2.py and deepseek_v2.py."""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import GraphContext
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.models.deepseek_vl2 import deepseek_vl2_image_tokens, mlp_projector_tensors, siglip_so400m_timm_tower

CONFIG = Path(__file__).resolve().parents[1] / "fixtures/oracle/configs/deepseek-ai--deepseek-vl2-tiny.ome.json"


def _bytes(tensors) -> int:
    return weight_bytes_per_rank(tensors, model_dtype="bfloat16", allocator_rounding=False).unrounded_bytes


def _adapter():
    return adapter_for(ModelConfig.from_dict(json.loads(CONFIG.read_text())))


def test_tower_and_projector_by_hand():
    """bf16, TP 1: patch embed 1152*3*14*14 + 1152 = 678,528; positions 729*1152 = 839,808; a block:
    LayerNorms 4*1152 + qkv 3456*1152 + 3456 + proj 1152² + 1152 + fc1 4304*1152 + 4304 + fc2 + 1152
    = 15,239,504, 27 blocks 411,466,608; final LayerNorm 2,304; MAP head: latent 1,152 + q 1152² + 1152
    + kv 2304*1152 + 2304 + proj 1152² + 1152 + LayerNorm 2,304 + Mlp 2*4304*1152 + 4304 + 1152 =
    15,238,352; projector (n_embed 1280): 1280*4608 + 1280 + 1280² + 1280 + newline/separator 2,560 =
    7,541,760: 435,767,360 elements = 871,534,720 B."""
    pc = json.loads(CONFIG.read_text())["projector_config"]
    assert _bytes(siglip_so400m_timm_tower(1) + mlp_projector_tensors(pc)) == 871_534_720


def test_tp_splits_only_the_mlps():
    """TP 2 (patch_vit_for_tp): the 28 Mlps' fc1 (4304 -> 2152 rows, bias too) and fc2 (2152
    columns) halve; attention, norms and the MAP head's q/kv/proj stay whole:
    28 * (2 * 4304*1152 + 4304) / 2 elements fewer, 139,001,856 B fewer."""
    assert _bytes(siglip_so400m_timm_tower(1)) - _bytes(siglip_so400m_timm_tower(2)) == 28 * (2 * 4304 * 1152 + 4304)


def test_tiny_language_model_is_multi_head():
    """-tiny: qk head dims 0, so DeepseekAttention: per layer qkv_proj 3*1280*1280 and o_proj 1280² (TP 1),
    a rotary cache 4096 x 128 and a full-attention spec of 10 heads x 128."""
    a = _adapter()
    assert a.use_mha and a.mha_head_dim == 128
    names = {t.name: t for t in a.attention_tensors(12, GraphContext(model_dtype="bfloat16"))}
    assert (names["self_attn.qkv_proj"].rows, names["self_attn.qkv_proj"].cols) == (3840, 1280)
    spec = next(iter(a.kv_cache_specs(GraphContext(model_dtype="bfloat16", tensor_parallel_size=2)).values()))
    assert (spec.num_kv_heads, spec.head_size) == (5, 128)
    assert not hasattr(a, "latent_head_size")


def test_weights_match_vllm():
    """The whole rank is vLLM 0.33's own figure (fixtures deepseek-ai-deepseek-vl2-tiny.ome.tp1/.tp2)."""
    a = _adapter()
    assert _bytes(a.weight_tensors(GraphContext(model_dtype="bfloat16"))) == 6_742_051_648
    assert _bytes(a.weight_tensors(GraphContext(model_dtype="bfloat16", tensor_parallel_size=2))) == 3_530_470_528


def test_image_tokens():
    """h = w = ceil(27 / 2) = 14: a 384 x 3456 (w x h) candidate is 1 x 9 tiles: global 14*15 = 210,
    tiles (9*14) * (1*14 + 1) = 1,890, plus 1: 2,101 tokens, the most of -tiny's candidates."""
    assert deepseek_vl2_image_tokens(384, 3456) == 2101
    ctx = GraphContext(model_dtype="bfloat16")
    assert _adapter().max_tokens_per_item(_adapter().config, ctx) == {"image": 2101}


OCR = CONFIG.parent / "deepseek-ai--DeepSeek-OCR.transcribed.json"


def test_ocr_deepencoder_by_hand():
    """DeepSeek-OCR's encoders, bf16, TP 1.  SAM ViT-B: patch embed 768*3*16*16 + 768 = 590,592;
    positions 64*64*768 = 3,145,728; a block: LayerNorms 3,072 + qkv 2304*768 + 2304 + proj 768² + 768
    + lin1 3072*768 + 3072 + lin2 + 768 = 7,087,872, 12 blocks 85,054,464; relative positions 4 global
    blocks x 2 x 127*64 + 8 windowed x 2 x 27*64 = 92,672; neck 256*768 + 256*256*9 + 4*256 = 787,456;
    net_2 512*256*9 + net_3 1024*512*9 = 5,898,240: 95,569,152.  CLIP-L: patch embed 1024*3*14*14 =
    602,112, class 1,024, positions 257*1024 = 263,168, pre-LayerNorm 2,048, a layer 4,096 + qkv
    3072*1024 + 3072 + out 1024² + 1024 + fc1 4096*1024 + 4096 + fc2 + 1024 = 12,596,224, 24 layers:
    303,177,728.  Linear projector 1280*2048 + 1280 + separators 2,560 = 2,625,280.  401,372,160
    elements = 802,744,320 B + position_ids 257 int64 (2,056 B) = 802,746,376 B (vLLM 0.33's own
    tensors of fixture deepseek-ai-DeepSeek-OCR.transcribed.tp1, less the language model)."""
    a = adapter_for(ModelConfig.from_dict(json.loads(OCR.read_text())))
    ctx = GraphContext(model_dtype="bfloat16")
    assert _bytes(a.vision_weight_tensors(a.config, ctx)) == 802_746_376
    assert _bytes(a.weight_tensors(ctx)) == 6_674_311_880


def test_ocr_image_tokens():
    """The 1280² dummy is 2 x 2 tiles of 640 (aspect 1): global 16 x 17 = 272, tiles (2*10) x (2*10 + 1)
    = 420, plus 1: 693 tokens; a 640² image is one tile: 272 + 1 = 273."""
    from vmemplan.models.deepseek_vl2 import deepseek_ocr_image_tokens

    assert deepseek_ocr_image_tokens(1280, 1280) == 693
    assert deepseek_ocr_image_tokens(640, 640) == 273
