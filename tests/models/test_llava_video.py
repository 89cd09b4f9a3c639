"""LLaVA-NeXT-Video, LLaVA-OneVision and H2OVL (vmemplan/models/llava_video.py), worked by hand
against vLLM 0.33.0's llava_next_video.py, llava_onevision.py and h2ovl.py."""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import GraphContext
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures/oracle/configs"


def _adapter(name: str, **change: object):
    raw = json.loads((CONFIGS / name).read_text())
    raw.update(change)
    return adapter_for(ModelConfig.from_dict(raw))


def _encoder_elements(tensors) -> int:
    return sum(t.elements for t in tensors if t.kind == "encoder")


def test_next_video_tower_replicated_projector():
    """CLIP-L/336 to layer -2 (23 layers) + class + patch + positions + pre-LN: 290,909,184 elements
    at TP 1, no post-LN (require_post_norm=False); the projector is two plain nn.Linear,
    4096*1024 + 4096 + 4096*4096 + 4096 = 20,979,712 on every rank; no image_newline."""
    a = _adapter("llava-hf--LLaVA-NeXT-Video-7B-hf.transcribed.json")
    one = a.weight_tensors(GraphContext(model_dtype="bfloat16", max_model_len=10240))
    assert _encoder_elements(one) == 290_909_184 + 20_979_712
    assert not any("post_layernorm" in t.name or t.name == "image_newline" for t in one)
    two = a.weight_tensors(GraphContext(model_dtype="bfloat16", max_model_len=10240, tensor_parallel_size=2))
    proj = [t for t in two if t.name.startswith("multi_modal_projector")]
    assert sum(t.elements for t in proj) == 20_979_712
    # no supports_encoder_tp_data: --mm-encoder-tp-mode data falls back to weights (tower still split)
    data = a.weight_tensors(GraphContext(model_dtype="bfloat16", max_model_len=10240, tensor_parallel_size=2,
                                         mm_encoder_tp_mode="data"))
    assert _encoder_elements(data) == _encoder_elements(two) < _encoder_elements(one)
    # video is the only modality the tower serves (_mark_tower_model(vllm_config, "video"))
    text_only = a.weight_tensors(GraphContext(model_dtype="bfloat16", max_model_len=10240,
                                              limit_mm_per_prompt={"video": 0}))
    assert _encoder_elements(text_only) == 0


def test_onevision_weights_by_hand():
    """LlavaOnevisionConfig defaults, bf16, TP 1.  SigLIP so400m (26 layers of 15,239,504:
    LN 4*1152, qkv 3*1152*1152 + 3456, out 1152^2 + 1152, fc1/fc2 4304*1152 + 4304 / + 1152) +
    patch 1152*588 + 1152 + positions 729*1152 = 397,745,440, no post-LN; projector 4096*1152 + 4096
    + 4096^2 + 4096 = 21,504,000; image_newline 4096.  Qwen2 defaults (h 4096, 32 layers, 22016,
    vocab 151936, untied): 12,049,846,272.  12,469,099,808 elements * 2 B + rotary 32768*128*2 B
    + 32*16 B of scales + SigLIP position_ids 729 int64 = 24,946,594,568 B (vLLM 0.33's own figure,
    fixture llava-hf-LlavaOnevisionConfig-defaults.synthetic.tp1)."""
    a = _adapter("llava-hf--LlavaOnevisionConfig-defaults.synthetic.json")
    ctx = GraphContext(model_dtype="bfloat16", max_model_len=32768)
    tensors = a.weight_tensors(ctx)
    assert _encoder_elements(tensors) == 397_745_440 + 21_504_000 + 4096
    got = weight_bytes_per_rank(tensors, model_dtype="bfloat16", allocator_rounding=False).unrounded_bytes
    assert got == 24_946_594_568
    text_only = a.weight_tensors(GraphContext(model_dtype="bfloat16", max_model_len=32768,
                                              limit_mm_per_prompt={"image": 0, "video": 0}))
    assert _encoder_elements(text_only) == 4096  # image_newline: a bare nn.Parameter vLLM keeps (no_init_weights)


def test_granite4_vision_window_qformers_and_deepstack_buffers():
    """Granite Vision 4.1 (vision 1152, text 2560, downsample 4/8): one WindowQFormerDownsampler =
    Q-Former LN 2304 + self/cross q/k/v/dense 8 x 1152^2 + 8 x 1152 + their LNs 4 x 1152 +
    3072 x 1152 + 3072 + 1152 x 3072 + 1152 + LN 2304 + norm 2304 + query 16 x 1152 + image_positions
    64 x 1152 + out_linear 2560 x 1152 + 2560 = 20,763,520; four deepstack + four spatial = 8.
    Eight deepstack buffers of max_num_batched_tokens x 2560, kept when images are off (made
    outside _mark_tower_model); the tower and projectors are not."""
    a = _adapter("ibm-granite--granite-vision-4.1.transcribed-trimmed.json")
    ctx = GraphContext(model_dtype="bfloat16", max_model_len=2048, max_num_batched_tokens=8192)
    tensors = a.weight_tensors(ctx)
    assert sum(t.elements for t in tensors if t.name.startswith("projectors.")) == 8 * 20_763_520
    assert sum(t.elements for t in tensors if t.name == "_ds_buffers") == 8 * 8192 * 2560
    text_only = a.weight_tensors(GraphContext(model_dtype="bfloat16", max_model_len=2048, max_num_batched_tokens=8192,
                                              limit_mm_per_prompt={"image": 0}))
    assert _encoder_elements(text_only) == 0
    assert sum(t.elements for t in text_only if t.name == "_ds_buffers") == 8 * 8192 * 2560


def test_h2ovl_is_internvl_chat_with_image_only_items():
    """H2OVLChatModel: InternVLChatModel's tower, mlp1 and LM (weights equal to the InternVLChat
    adapter's on the same geometry); its processor answers images only.  InternVL3-1B geometry:
    448 px tiles of 14 px patches, downsample 0.5 -> 256 tokens a tile, 12 + thumbnail tiles."""
    h2 = _adapter("h2oai--H2OVL-on-InternVL3-1B.derived.synthetic.json")
    iv = _adapter("h2oai--H2OVL-on-InternVL3-1B.derived.synthetic.json", architectures=["InternVLChatModel"],
                  model_type="internvl_chat")
    ctx = GraphContext(model_dtype="bfloat16", max_model_len=32768, tensor_parallel_size=2)
    assert sum(t.elements for t in h2.weight_tensors(ctx)) == sum(t.elements for t in iv.weight_tensors(ctx))
    assert h2.max_tokens_per_item(h2.config, ctx) == {"image": 13 * 256}
    assert "video" in iv.max_tokens_per_item(iv.config, ctx)
