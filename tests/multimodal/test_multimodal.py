"""Multimodal laws and vision-language adapters.  Expected numbers are worked by hand in the
comments (vLLM 0.33.0 rules unless a corpus log of another release is named)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmemplan.core.errors import UsageError
from vmemplan.laws import multimodal as mm
from vmemplan.request.flags import parse_limit_mm_per_prompt
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.core.graph import GraphContext
from vmemplan.models.multimodal import Llava, Mllama, Mistral3, Qwen2_5_VL, Qwen3_VL, qwen2_5_vl_tower

ROOT = Path(__file__).resolve().parents[2]
GIB = 1 << 30
NO_MM = (("image", 0), ("video", 0))


def _cfg(path: str) -> ModelConfig:
    return ModelConfig.from_dict(json.loads((ROOT / path).read_text()))


def qwen25() -> ModelConfig:
    return _cfg("registry/models/Qwen--Qwen2.5-VL-7B-Instruct.json")


def _bytes(tensors, dtype="bfloat16", rounding=False) -> int:
    return weight_bytes_per_rank(tensors, model_dtype=dtype, allocator_rounding=rounding).total_bytes


# ---------------------------------------------------------------------------------------
# tokens per item
# ---------------------------------------------------------------------------------------


def test_1280x720_image_in_qwen25_vl():
    # factor 28: round(720/28)=26 -> 728, round(1280/28)=46 -> 1288; 728*1288 = 937,664 <= 1,003,520
    # tokens = (728/14) * (1288/14) / 4 = 52 * 92 / 4 = 1196   (the naive 1280*720/28^2 = 1175.5)
    assert mm.qwen_vl_image_tokens(1280, 720, patch_size=14, merge_size=2, min_pixels=56 * 56,
                                   max_pixels=28 * 28 * 1280) == 1196


def test_smart_resize_scales_down_a_large_image():
    # 4000x3000 > max 1,003,520: beta = sqrt(12e6 / 1,003,520) = 3.45803
    # h = floor(3000 / 3.45803 / 28) * 28 = 30 * 28 = 840 ; w = floor(4000 / 3.45803 / 28) * 28 = 41 * 28 = 1148
    assert mm.smart_resize(3000, 4000, factor=28, min_pixels=3136, max_pixels=1003520) == (840, 1148)
    # tokens = 60 * 82 / 4 = 1230
    assert mm.qwen_vl_image_tokens(4000, 3000, patch_size=14, merge_size=2, min_pixels=3136,
                                   max_pixels=1003520) == 1230


def test_smart_resize_scales_up_a_tiny_image():
    # 20x20 -> rounds to 28x28 = 784 < 3136: beta = sqrt(3136/400) = 2.8 -> ceil(56/28)*28 = 56
    assert mm.smart_resize(20, 20, factor=28, min_pixels=3136, max_pixels=1003520) == (56, 56)


def test_extreme_aspect_ratio_is_refused():
    with pytest.raises(UsageError):
        mm.smart_resize(10, 2100, factor=28, min_pixels=3136, max_pixels=1003520)


@pytest.mark.parametrize("max_pixels, tokens, size", [
    # 1,003,520 / 28^2 = 1280 merged patches = 32 x 40 -> 1120 x 896 px, 64*80/4 = 1280 tokens
    (28 * 28 * 1280, 1280, (1120, 896)),
    # 12,845,056 / 784 = 16384 = 128 x 128 -> 3584 x 3584 px, 256*256/4 = 16384 tokens
    (12845056, 16384, (3584, 3584)),
])
def test_largest_qwen_image(max_pixels, tokens, size):
    assert mm.qwen_vl_image_size_with_most_features(max_pixels=max_pixels, patch_size=14, merge_size=2) == size
    assert mm.qwen_vl_max_image_tokens(patch_size=14, merge_size=2, min_pixels=3136, max_pixels=max_pixels) == tokens


@pytest.mark.parametrize("seq_len, tokens", [
    # 2 frames of the largest image = 1280 tokens.  32768 // 1280 = 25 pairs = 50 frames fit,
    # capped at 14 per video -> 7 pairs -> 8960 tokens
    (32768, 8960),
    # 4096 // 1280 = 3 pairs = 6 frames (< 14) -> 3 * 1280 = 3840
    (4096, 3840),
    # less than one pair fits: still one frame -> one temporal patch -> 1280
    (1000, 1280),
])
def test_largest_qwen_video(seq_len, tokens):
    assert mm.qwen_vl_max_video_tokens(seq_len=seq_len, max_videos=1, patch_size=14, merge_size=2,
                                       temporal_patch_size=2, min_pixels=3136, max_pixels=1003520) == tokens


def test_pixtral_image_tokens_mistral_small_31():
    # 1540 px, patch 14 x merge 2 = 28: (1540-1)//28 + 1 = 55 per side -> 3025 embeddings
    assert mm.pixtral_image_tokens(1540, 1540, image_size=1540, patch_size=14, spatial_merge_size=2) == 3025
    # a 3080 x 1540 image is scaled by 2 -> 1540 x 770: 55 cols x 28 rows = 1540
    assert mm.pixtral_image_tokens(3080, 1540, image_size=1540, patch_size=14, spatial_merge_size=2) == 1540


@given(w=st.integers(28, 4000), h=st.integers(28, 4000))
def test_qwen_image_never_exceeds_the_largest(w, h):
    if max(w, h) / min(w, h) > 200:
        return
    t = mm.qwen_vl_image_tokens(w, h, patch_size=14, merge_size=2, min_pixels=3136, max_pixels=1003520)
    assert 4 <= t <= 1280


# ---------------------------------------------------------------------------------------
# --limit-mm-per-prompt
# ---------------------------------------------------------------------------------------


def test_parse_limit_json_and_forms():
    assert parse_limit_mm_per_prompt('{"image": 2, "video": 0}') == (("image", 2), ("video", 0))
    assert parse_limit_mm_per_prompt({"image": {"count": 3, "width": 512, "height": 512}}) == (("image", 3),)
    assert parse_limit_mm_per_prompt("image=1,video=0") == (("image", 1), ("video", 0))
    assert parse_limit_mm_per_prompt(None) == ()
    assert mm.limit_for((), "image") == 999
    assert mm.limit_for((("image", 2),), "video") == 999


@pytest.mark.parametrize("bad", ['{"image": -1}', '{"image": 1.5}', "{nope", "image", "[1, 2]"])
def test_parse_limit_rejects(bad):
    with pytest.raises(UsageError):
        parse_limit_mm_per_prompt(bad)


# ---------------------------------------------------------------------------------------
# encoder budget
# ---------------------------------------------------------------------------------------


def test_encoder_budget_qwen25_vl_defaults():
    # image 1280, video 8960 (max_model_len 32768), mnbt 8192:
    # compute = max(8192, 8960) = 8960; cache = max(8192, 8960) = 8960; budget = 8960
    # video: per prompt max(1, min(999, 32768 // 8960 = 3)) = 3; per batch max(1, min(8960 // 8960, 256 * 3)) = 1
    # image: per prompt min(999, 32768 // 1280 = 25) = 25;     per batch min(8960 // 1280 = 7, 6400) = 7
    b = mm.encoder_budget({"image": 1280, "video": 8960}, (), max_num_batched_tokens=8192, max_model_len=32768,
                          max_num_seqs=256)
    assert (b.compute_budget_tokens, b.cache_size_tokens, b.budget_tokens) == (8960, 8960, 8960)
    assert b.max_items_per_prompt == {"image": 25, "video": 3}
    assert b.max_items_per_batch == {"image": 7, "video": 1}
    assert b.profile_modality == "video" and b.profile_items == 1
    assert b.log_line() == ("Encoder cache will be initialized with a budget of 8960 tokens, and profiled with "
                            "1 video items of the maximum feature size.")


def test_encoder_budget_images_only_and_no_chunked_prefill():
    # video off: budget = max(8192, 1280) = 8192 -> 8192 // 1280 = 6 images per batch
    b = mm.encoder_budget({"image": 1280, "video": 8960}, (("video", 0),), max_num_batched_tokens=8192,
                          max_model_len=32768, max_num_seqs=256)
    assert b.budget_tokens == 8192 and b.max_items_per_batch == {"image": 6}
    # limit 2 per prompt, 2 seqs: min(8192 // 1280 = 6, 2 * 2) = 4
    b = mm.encoder_budget({"image": 1280}, (("image", 2),), max_num_batched_tokens=8192, max_model_len=32768,
                          max_num_seqs=2)
    assert b.max_items_per_batch == {"image": 4}
    # chunked prefill off: reqs = min(256, 8192 // 3025 = 2) -> per batch min(8192 // 3025 = 2, 2 * 2) = 2
    b = mm.encoder_budget({"image": 3025}, (), max_num_batched_tokens=8192, max_model_len=8192, max_num_seqs=256,
                          enable_chunked_prefill=False)
    assert b.max_items_per_prompt == {"image": 2} and b.max_items_per_batch == {"image": 2}


def test_limit_zero_disables_the_encoder_budget():
    b = mm.encoder_budget({"image": 1280, "video": 8960}, NO_MM, max_num_batched_tokens=8192,
                          max_model_len=32768, max_num_seqs=256)
    assert b.budget_tokens == 0 and not b.profiles_encoder and b.log_line() is None


@given(item=st.integers(1, 40000), mnbt=st.integers(1, 65536), seqs=st.integers(1, 1024),
       mml=st.integers(1, 131072), limit=st.integers(1, 999))
def test_budget_properties(item, mnbt, seqs, mml, limit):
    b = mm.encoder_budget({"image": item}, (("image", limit),), max_num_batched_tokens=mnbt, max_model_len=mml,
                          max_num_seqs=seqs)
    assert b.budget_tokens >= item  # the largest item always fits
    assert b.budget_tokens == max(mnbt, item)
    assert 1 <= b.max_items_per_batch["image"] <= max(1, b.budget_tokens // item)


# ---------------------------------------------------------------------------------------
# profile bytes
# ---------------------------------------------------------------------------------------


def test_encoder_cache_and_activation_bytes():
    # 1 video x 8960 tokens x 3584 (LM hidden) x 2 B = 64,225,280
    assert mm.encoder_cache_bytes(num_items=1, tokens_per_item=8960, output_width=3584, dtype_bytes=2) == 64_225_280
    # 8960 tokens x merge^2 4 = 35,840 patches; width 3*1280 + 3*3420 = 14,100; x 2 B = 1,010,688,000
    assert mm.encoder_activation_bytes(num_items=1, patches_per_item=35840, hidden_size=1280, intermediate_size=3420,
                                       hidden_buffers=3, intermediate_buffers=3) == 1_010_688_000
    # TP 2 "weights": width 3*1280 + 3*1710 = 8,970 -> 35,840 * 8,970 * 2 = 642,969,600
    assert mm.encoder_activation_bytes(num_items=1, patches_per_item=35840, hidden_size=1280, intermediate_size=3420,
                                       hidden_buffers=3, intermediate_buffers=3, tensor_parallel_size=2) == 642_969_600
    # TP 2 "data": half the patches at full width: 17,920 * 14,100 * 2 = 505,344,000
    assert mm.encoder_activation_bytes(num_items=1, patches_per_item=35840, hidden_size=1280, intermediate_size=3420,
                                       hidden_buffers=3, intermediate_buffers=3, tensor_parallel_size=2,
                                       data_parallel_encoder=True) == 505_344_000


def test_profile_peak_combines_encoder_and_language_model():
    budget = mm.EncoderBudget({"image": 10}, 10, 10, {"image": 1}, {"image": 1})
    p = mm.MmProfile(budget, "image", 1, 10, encoder_activation_bytes=500, encoder_cache_bytes=30)
    assert mm.profile_peak_bytes(100, p) == 500          # encoder dominates: max(500, 30 + 100)
    assert mm.profile_peak_bytes(1000, p) == 1030        # LM dominates: cache held on top of it
    skipped = mm.MmProfile(budget, None, 0, 0, 0, 0, skipped="--skip-mm-profiling")
    assert mm.profile_peak_bytes(1000, skipped) == 1000
    assert mm.profile_peak_bytes(1000, None) == 1000


# ---------------------------------------------------------------------------------------
# adapters: weights
# ---------------------------------------------------------------------------------------


def test_registry_picks_vision_adapters():
    assert isinstance(adapter_for(qwen25()), Qwen2_5_VL)
    assert isinstance(adapter_for(_cfg("registry/models/mistralai--Mistral-Small-3.1-24B-Instruct-2503.json")), Mistral3)
    assert isinstance(adapter_for(_cfg("tests/fixtures/configs/mm/Qwen--Qwen3-VL-Embedding-2B.json")), Qwen3_VL)
    assert isinstance(adapter_for(_cfg("tests/fixtures/configs/mm/meta-llama--Llama-3.2-11B-Vision.json")), Mllama)


def test_qwen25_vl_encoder_weights_per_rank():
    vc = qwen25().raw["vision_config"]
    # c=1280, depth 32, I=3420, out 3584, patch 14, temporal 2, merge 2
    # patch embed 1280 x (3*2*14*14 = 1176) = 1,505,280
    # block: norms 2560 + qkv 3840*1280 + 3840 + proj 1280*1280 + 1280 + gate_up 6840*1280 + 6840
    #        + down 1280*3420 + 1280 = 19,702,200 ; x 32 = 630,470,400
    # merger: 1280 + 5120*5120 + 5120 + 3584*5120 + 3584 = 44,574,464
    # total 676,550,144 parameters -> x 2 B = 1,353,100,288 (+ rotary buffer 8192 x 40 x 2 B = 655,360)
    tp1 = qwen2_5_vl_tower(vc, 1)
    assert sum(t.elements for t in tp1 if t.kind != "buffer") == 676_550_144
    assert _bytes(tp1) == 676_550_144 * 2 + 655_360
    # tp 2: qkv 1920*1280 + 1920, proj 1280*640 + 1280, gate_up 3420*1280 + 3420, down 1280*1710 + 1280,
    # norms 2560 -> 9,853,660 x 32 = 315,317,120 ; merger 1280 + 2560*5120 + 2560 + 3584*2560 + 3584 = 22,289,664
    # + patch embed 1,505,280 = 339,112,064
    assert sum(t.elements for t in qwen2_5_vl_tower(vc, 2) if t.kind != "buffer") == 339_112_064
    a = Qwen2_5_VL(qwen25())
    data = GraphContext(tensor_parallel_size=2, mm_encoder_tp_mode="data")
    assert sum(t.elements for t in a.weight_tensors(data) if t.kind == "encoder") == 676_550_144
    with pytest.raises(UsageError):  # 16 vision heads: tp 3 cannot split them
        qwen2_5_vl_tower(vc, 3)


def test_qwen25_vl_total_params_and_limit_zero():
    a = Qwen2_5_VL(qwen25())
    # Qwen2.5-7B text (7,615,616,512) + tower (676,550,144) = 8,292,166,656 ("about 8.29B", SOURCES.md)
    assert a.total_params() == 8_292_166_656
    full = a.weight_tensors(GraphContext())
    text = a.weight_tensors(GraphContext(limit_mm_per_prompt=NO_MM))
    # limit 0 for image and video: the tower is not built, and only it goes
    assert _bytes(full) - _bytes(text) == 676_550_144 * 2 + 655_360
    # one modality left on keeps the tower
    assert _bytes(a.weight_tensors(GraphContext(limit_mm_per_prompt=(("video", 0),)))) == _bytes(full)
    # M-RoPE cache: 128000 x 4 positions x 128 x 2 B = 131,072,000
    rope = [t for t in full if t.name == "rotary_emb.cos_sin_cache"]
    assert rope[0].rows * rope[0].cols * 2 == 131_072_000


def test_qwen3_vl_embedding_2b_weights_log_019():
    # corpus 019 (vLLM 0.11.0, fp16, limit image 0 video 0): "Model loading took 3.4554 GiB"
    # text: embed 151936*2048 = 311,164,928 (tied head); per layer qkv 4096*2048 + o 2048*2048
    # + gate_up 12288*2048 + down 2048*6144 + norms 2*2048 + q/k norm 2*128 = 50,336,000; x 28 = 1,409,408,000
    # + final norm 2048 -> 1,720,574,976 params x 2 B = 3,441,149,952
    # + M-RoPE cache 262,144 x 4 x 128 x 2 B = 268,435,456 -> 3,709,585,408 B = 3.45484 GiB
    # + each attention layer's four fp32 scales (set_default_quant_scales): 28 x 16 B = 448 B
    # (the x 4 M-RoPE rows are 0.11.0's: from 0.32.0 Qwen3-VL passes mrope_positions_factor 1)
    a = Qwen3_VL(_cfg("tests/fixtures/configs/mm/Qwen--Qwen3-VL-Embedding-2B.json"))
    ctx = GraphContext(model_dtype="float16", limit_mm_per_prompt=NO_MM, vllm_version=(0, 11, 0))
    tensors = a.weight_tensors(ctx)
    newest = a.weight_tensors(GraphContext(model_dtype="float16", limit_mm_per_prompt=NO_MM))
    assert _bytes(tensors, "float16") - _bytes(newest, "float16") == 262_144 * 3 * 128 * 2
    assert not [t for t in tensors if t.kind == "encoder"]
    assert _bytes(tensors, "float16") == 3_709_585_408 + 28 * 16
    got = _bytes(tensors, "float16", rounding=True) / GIB
    assert abs(got / 3.4554 - 1) < 0.005


def test_qwen3_vl_tower_arithmetic():
    a = Qwen3_VL(_cfg("tests/fixtures/configs/mm/Qwen--Qwen3-VL-Embedding-2B.json"))
    enc = [t for t in a.weight_tensors(GraphContext(model_dtype="float16")) if t.kind == "encoder"]
    # patch 1024*(3*2*16*16) + 1024 = 1,573,888 ; pos 2304*1024 = 2,359,296
    # block: LN 4*1024 + qkv 3072*1024 + 3072 + proj 1024*1024 + 1024 + fc1 4096*1024 + 4096
    #        + fc2 1024*4096 + 1024 = 12,596,224 ; x 24 = 302,309,376
    # merger: LN 2*1024 + 4096*4096 + 4096 + 2048*4096 + 2048 = 25,174,016
    # 3 deepstack mergers (LN 2*4096): 25,180,160 x 3 = 75,540,480
    assert sum(t.elements for t in enc) == 1_573_888 + 2_359_296 + 302_309_376 + 25_174_016 + 75_540_480
    # deepstack: each encoder output token is 2048 x (1 + 3) wide in the encoder cache
    assert a.encoder_output_width(a.config) == 8192


def test_mllama_weights_log_010():
    # corpus 010 (vLLM 0.6.6, dummy weights, bf16): "model weights take 19.86GiB"
    a = Mllama(_cfg("tests/fixtures/configs/mm/meta-llama--Llama-3.2-11B-Vision.json"))
    got = _bytes(a.weight_tensors(GraphContext()), rounding=True) / GIB
    assert abs(got / 19.86 - 1) < 0.005
    # embedding keeps 8 extra image-token rows: 128256 + 8 = 128264 -> padded to 128320
    emb = [t for t in a.weight_tensors(GraphContext()) if t.name == "model.embed_tokens"][0]
    assert emb.rows == 128320


def test_mllama_kv_specs_cross_attention():
    from vmemplan.laws.kv_pool import PoolContext
    from vmemplan.core.kv_specs import CrossAttentionSpec, FullAttentionSpec

    a = Mllama(_cfg("tests/fixtures/configs/mm/meta-llama--Llama-3.2-11B-Vision.json"))
    specs = a.kv_cache_specs(GraphContext())
    cross = [n for n, s in specs.items() if isinstance(s, CrossAttentionSpec)]
    assert len(cross) == 8 and len(specs) == 40
    assert sum(isinstance(s, FullAttentionSpec) and not isinstance(s, CrossAttentionSpec)
               for s in specs.values()) == 32
    # a cross layer caches the encoder tokens: cdiv(8192, 16) = 512 pages of 16*8*128*2*2 = 65,536 B
    s = specs[cross[0]]
    assert s.max_memory_usage_bytes(PoolContext(max_model_len=4096, max_num_batched_tokens=8192)) == 512 * 65536
    assert not a.prefix_caching_supported()


def test_mllama_activation_log_010_explained():
    """Corpus 010: 36.63 GiB activation peak (V0 0.6.6, --max-model-len 65536, --max-num-seqs 128).

    V0's encoder-decoder profile (vllm/worker/enc_dec_model_runner.py::profile_run, 0.6.6) gives
    EVERY one of the 128 dummy sequences an image: 4 tiles of 1601 patches, padded to 1608
    (MllamaVisionModel pads to a multiple of 8) -> 128 * 4 * 1608 = 823,296 vision tokens through a
    1280-wide, 5120-MLP tower.  The language model sees only 65,536 tokens.
    """
    vision_tokens = 128 * 4 * 1608
    enc = mm.encoder_activation_bytes(num_items=128, patches_per_item=4 * 1608, hidden_size=1280,
                                      intermediate_size=5120, hidden_buffers=3, intermediate_buffers=3)
    # 823,296 * (3*1280 + 3*5120) * 2 = 31,614,566,400 B = 29.44 GiB
    assert enc == vision_tokens * 19200 * 2 == 31_614_566_400
    # the 5 intermediate layers' outputs are kept for the 7680-wide feature: 5 * 823,296 * 1280 * 2
    held = 5 * vision_tokens * 1280 * 2
    # the language model alone at 65,536 tokens: 65,536 * 2 * (3*4096 + 3*14336) = 7,247,757,312 (6.75 GiB)
    lm = 65536 * 2 * (3 * 4096 + 3 * 14336)
    assert lm / GIB < 7
    estimate = (enc + held) / GIB  # 39.25 GiB
    assert abs(estimate / 36.63 - 1) < 0.10  # the encoder explains the peak (an estimate, within 10 %)


def test_mistral3_weights_and_budget():
    cfg = _cfg("registry/models/mistralai--Mistral-Small-3.1-24B-Instruct-2503.json")
    a = Mistral3(cfg)
    enc = [t for t in a.weight_tensors(GraphContext()) if t.kind == "encoder"]
    # pixtral: patch 1024*3*14*14 = 602,112 ; ln_pre 1024
    # layer: norms 2048 + qkv 3072*1024 + o 1024*1024 + gate_up 8192*1024 + down 1024*4096 = 16,779,264 ; x 24
    # projector: norm 1024 + merging 1024*4096 + linear_1 5120*1024 + linear_2 5120*5120 (no bias)
    expected = 602_112 + 1024 + 24 * 16_779_264 + 1024 + 1024 * 4096 + 5120 * 1024 + 5120 * 5120
    assert sum(t.elements for t in enc) == expected
    p = a.mm_profile(cfg, GraphContext(max_num_batched_tokens=8192, max_model_len=32768, max_num_seqs=256))
    # one image 3025 tokens; budget max(8192, 3025) = 8192; 8192 // 3025 = 2 items
    assert (p.tokens_per_item, p.budget.budget_tokens, p.num_items) == (3025, 8192, 2)
    # cache: 2 * 3025 * 5120 * 2 B = 61,952,000
    assert p.encoder_cache_bytes == 61_952_000


def test_llava_clip_tower_small_config():
    raw = {
        "architectures": ["LlavaForConditionalGeneration"], "vision_feature_layer": -2,
        "text_config": {"model_type": "llama", "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                        "intermediate_size": 32, "vocab_size": 64},
        "vision_config": {"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 16,
                          "patch_size": 2, "image_size": 4},
    }
    a = adapter_for(ModelConfig.from_dict(raw))
    assert isinstance(a, Llava)
    enc = [t for t in a.weight_tensors(GraphContext()) if t.kind == "encoder"]
    # -2 of 2 layers -> 1 layer runs, no post-LayerNorm
    # patch 8*3*2*2 = 96, positions (4/2)^2 + 1 = 5 -> 40, class 8, pre-LN 16
    # layer: LN 32 + qkv 24*8 + 24 + out 64 + 8 + fc1 128 + 16 + fc2 128 + 8 = 600
    # projector: 16*8 + 16 + 16*16 + 16 = 416
    assert sum(t.elements for t in enc) == 96 + 40 + 8 + 16 + 600 + 416
    # CLIP 'default' strategy drops the class token: (4/2)^2 = 4 tokens
    assert a.max_tokens_per_item(a.config, GraphContext()) == {"image": 4}


def test_skip_mm_profiling_and_limit_zero_profiles():
    a = Qwen2_5_VL(qwen25())
    ctx = GraphContext(max_model_len=32768, max_num_batched_tokens=8192, max_num_seqs=256)
    p = a.multimodal_profile(ctx)
    assert p.profiled and p.modality == "video" and p.num_items == 1
    assert p.encoder_cache_bytes == 64_225_280 and p.encoder_activation_bytes == 1_010_688_000
    skip = a.multimodal_profile(GraphContext(skip_mm_profiling=True))
    assert not skip.profiled and skip.encoder_cache_bytes == 0
    off = a.multimodal_profile(GraphContext(limit_mm_per_prompt=NO_MM))
    assert not off.profiled and off.budget.budget_tokens == 0
    assert mm.profile_peak_bytes(123, off) == 123


def test_plan_end_to_end_limits():
    from vmemplan.api import plan

    base = plan("Qwen/Qwen2.5-VL-7B-Instruct", gpu="h100", max_model_len=32768, kv_cache_memory="20G")
    off = plan("Qwen/Qwen2.5-VL-7B-Instruct", gpu="h100", max_model_len=32768, kv_cache_memory="20G",
               limit_mm_per_prompt='{"image": 0, "video": 0}')
    # the tower (about 1.26 GiB) leaves the weights; the encoder profile leaves the peak
    assert 1.2 < (base.per_rank.weights_bytes - off.per_rank.weights_bytes) / GIB < 1.3
    assert base.per_rank.activation_peak_bytes > off.per_rank.activation_peak_bytes
    assert any(p.figure == "encoder_cache.budget_tokens" and p.value == 8960 for p in base.provenance)
    with pytest.raises(UsageError):
        plan("Qwen/Qwen2.5-VL-7B-Instruct", gpu="h100", mm_encoder_tp_mode="pipeline")
