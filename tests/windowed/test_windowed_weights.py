"""Weights of the windowed families: parameter counts by hand against published counts,
the gpt-oss mxfp4 checkpoint size, and per-rank sharding."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmemplan.core.errors import UsageError
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for
from vmemplan.core.graph import GraphContext
from vmemplan.model_config import gemma3_text_defaults
from vmemplan.models.gemma2 import Gemma2
from vmemplan.models.gemma3 import Gemma3
from vmemplan.models.gemma3_mm import Gemma3MM
from vmemplan.models.gemma4 import Gemma4
from vmemplan.models.gpt_oss import GptOss
from vmemplan.models.llama4 import llama4_no_rope_layers
from vmemplan.models.llama4_mm import Llama4MM
from vmemplan.models.mistral_windowed import MistralWindowed
from vmemplan.models.windowed import gemma_layer_types

GIB = 1 << 30


def _adapter(raw: dict):
    return adapter_for(ModelConfig.from_dict(raw))


def test_registration(config_dict):
    assert type(_adapter(config_dict("mistralai--Mistral-7B-v0.1.json"))) is MistralWindowed
    assert type(_adapter(config_dict("google--gemma-2-9b.json"))) is Gemma2
    assert type(_adapter(gemma3_text_defaults(config_dict("google--gemma-3-27b-it.json")))) is Gemma3MM
    assert type(_adapter(config_dict("google--gemma-3-1b-it.json"))) is Gemma3
    assert type(_adapter(config_dict("google--gemma-4-26B-A4B.json"))) is Gemma4
    assert type(_adapter(config_dict("openai--gpt-oss-20b.json"))) is GptOss
    assert type(_adapter(config_dict("meta-llama--Llama-4-Scout-17B-16E-Instruct.json"))) is Llama4MM


def test_mistral_7b_parameters(config_dict):
    # Llama shape: embed + head 2 × 32,000 × 4,096 = 262,144,000; per layer q, o 4096² each,
    # k, v 4096 × 1024 each, MLP 3 × 4096 × 14,336, 2 norms → 218,112,000 × 32 = 6,979,584,000;
    # final norm 4,096 → 7,241,732,096 (SOURCES.md; card "7.24B")
    assert _adapter(config_dict("mistralai--Mistral-7B-v0.1.json")).total_params() == 7_241_732_096


def test_gemma2_9b_parameters(config_dict):
    # embed 256,000 × 3,584 = 917,504,000 (logits reuse it: no head);
    # per layer: qkv (16 + 2 × 8) × 256 = 8,192 rows × 3,584 = 29,360,128; o 3,584 × 4,096 = 14,680,064;
    # MLP 3 × 3,584 × 14,336 = 154,140,672; 4 norms 14,336 → 198,195,200 × 42 = 8,324,198,400;
    # final norm 3,584 → 9,241,705,984 (published 9.24B)
    a = _adapter(config_dict("google--gemma-2-9b.json"))
    assert a.total_params() == 917_504_000 + 8_324_198_400 + 3_584 == 9_241_705_984
    assert not any(t.kind == "lm_head" for t in a.weight_tensors(GraphContext()))


def test_gemma3_1b_parameters(config_dict):
    # embed 262,144 × 1,152 = 301,989,888 (tied by Gemma-3's default);
    # per layer: qkv (4 + 2) × 256 = 1,536 × 1,152 = 1,769,472; o 1,152 × 1,024 = 1,179,648;
    # MLP 3 × 1,152 × 6,912 = 23,887,872; 4 norms 4,608; q/k norms 512 → 26,842,112 × 26 = 697,894,912;
    # final norm 1,152 → 999,885,952 (published "1B")
    assert _adapter(config_dict("google--gemma-3-1b-it.json")).total_params() == 999_885_952


def test_gemma3_27b_text_parameters_and_rope(config_dict):
    # embed 262,208 × 5,376 = 1,409,630,208 (tied);
    # per layer: qkv (32 + 32) × 128 = 8,192 × 5,376 = 44,040,192; o 5,376 × 4,096 = 22,020,096;
    # MLP 3 × 5,376 × 21,504 = 346,816,512; 4 norms 21,504; q/k norms 256 → 412,898,560 × 62
    # = 25,599,710,720; final norm 5,376 → 27,009,346,304
    # SigLIP (1,152 wide, 27 layers, MLP 4,304, 896 / 14): per layer qkv 3 × 1,152² + 3,456, out
    # 1,152² + 1,152, fc1 / fc2 2 × 4,304 × 1,152 + 4,304 + 1,152, 2 LayerNorms 4,608 → 15,239,504 ×
    # 27 = 411,466,608; patch conv 1,152 × 3 × 14² + 1,152; 4,096 positions × 1,152 = 4,718,592;
    # post-LN 2,304; projector 1,152 × 5,376 = 6,193,152 + soft-emb norm 1,152 → 423,060,336
    # → 27,432,406,640 (the published 27.4B)
    a = _adapter(gemma3_text_defaults(config_dict("google--gemma-3-27b-it.json")))
    assert a.total_params() == 27_009_346_304 + 423_060_336
    ropes = sorted((t.rows, t.cols) for t in a.weight_tensors(GraphContext())
                   if t.kind == "buffer" and t.cols > 1 and "rotary" in t.name)
    # local cache 131,072 rows, global (linear ×8) 1,048,576 rows, both 128 wide
    assert ropes == [(131_072, 128), (1_048_576, 128)]


GPT_OSS_20B = 20_914_757_184
GPT_OSS_120B = 116_829_156_672


def test_gpt_oss_parameters(config_dict):
    # per layer attention: qkv (64 + 16) × 64 = 5,120 × 2,880 = 14,745,600 (+ bias 5,120);
    #   o 2,880 × 4,096 = 11,796,480 (+ bias 2,880); sinks 64; 2 norms 5,760 → 26,555,904
    # per layer MoE, E experts: router E × 2,880 + E; w13 E × 5,760 × 2,880; w2 E × 2,880 × 2,880;
    #   biases E × (5,760 + 2,880)
    #   20b (E 32): 92,192 + 530,841,600 + 265,420,800 + 276,480 = 796,631,072
    #   120b (E 128): 368,768 + 2,123,366,400 + 1,061,683,200 + 1,105,920 = 3,186,524,288
    # embed + head 2 × 201,088 × 2,880 = 1,158,266,880; final norm 2,880
    # 20b: 24 × 823,186,976 + 1,158,269,760 = 20,914,757,184 (published 20.91B)
    # 120b: 36 × 3,213,080,192 + 1,158,269,760 = 116,829,156,672 (published 116.83B)
    assert _adapter(config_dict("openai--gpt-oss-20b.json")).total_params() == GPT_OSS_20B
    assert _adapter(config_dict("openai--gpt-oss-120b.json")).total_params() == GPT_OSS_120B


def test_gpt_oss_20b_expert_tensors_reproduce_the_mxfp4_checkpoint(config_dict):
    # Expert weights: 24 × (530,841,600 + 265,420,800) = 19,110,297,600 elements stored as
    # e2m1 (half a byte) plus one e8m0 scale byte per 32: 9,555,148,800 + 597,196,800 =
    # 10,152,345,600 B.  Everything else bf16: (20,914,757,184 − 19,110,297,600) × 2 =
    # 3,608,919,168 B.  Sum 13,761,264,768 B = the checkpoint's index total_size (SOURCES.md).
    a = _adapter(config_dict("openai--gpt-oss-20b.json"))
    ts = a.weight_tensors(GraphContext())
    # (the expert biases are expert tensors too, kept at 16 bits in the checkpoint; vLLM's MXFP4
    # method holds them in float32, which the scheme prices)
    experts = [t for t in ts if t.kind == "expert" and t.name.endswith("_weight")]
    assert all(t.quantizable for t in experts)
    assert {t.in_features_full for t in experts} == {2880}
    n_exp = sum(t.elements for t in experts)
    assert n_exp == 19_110_297_600
    rest = sum(t.elements for t in ts if t.kind != "buffer" and t not in experts)
    assert n_exp // 2 + n_exp // 32 + rest * 2 == 13_761_264_768
    # the only other quantizable tensors are the attention projections (the config's
    # modules_to_not_convert keeps them bf16; the scheme decides)
    assert {t.name for t in ts if t.quantizable and t.kind != "expert"} == {"attn.qkv_proj", "attn.o_proj"}


def test_gpt_oss_rope_cache_is_fp32_yarn(config_dict):
    # YaRN builds original 4,096 × factor 32 = 131,072 rows of 64, in fp32: 33,554,432 B
    a = _adapter(config_dict("openai--gpt-oss-120b.json"))
    (rope,) = [t for t in a.weight_tensors(GraphContext()) if t.name == "rotary_emb.cos_sin_cache"]
    assert (rope.rows, rope.cols, rope.dtype) == (131_072, 64, "float32")
    wb = weight_bytes_per_rank([rope], model_dtype="bfloat16")
    assert wb.total_bytes == 33_554_432


def test_gpt_oss_expert_parallel_splits_experts(config_dict):
    a = _adapter(config_dict("openai--gpt-oss-120b.json"))
    ctx = GraphContext(tensor_parallel_size=4, enable_expert_parallel=True)
    w13 = next(t for t in a.weight_tensors(ctx) if t.name == "mlp.experts.w13_weight")
    # EP over tp 4: 128 / 4 = 32 experts a rank, full width 2 × 2,880
    assert (w13.rows, w13.cols, w13.count) == (5_760, 2_880, 36 * 32)
    w13_tp = next(t for t in a.weight_tensors(GraphContext(tensor_parallel_size=4)) if t.name == "mlp.experts.w13_weight")
    assert (w13_tp.rows, w13_tp.count) == (2 * 720, 36 * 128)


def test_gemma4_26b_text_weights_and_log_061(config_dict):
    # window layer (25): qkv (16 + 16) × 256 = 8,192 × 2,816 = 23,068,672; o 2,816 × 4,096 = 11,534,336;
    #   q/k norms 512; MLP 3 × 2,816 × 2,112 = 17,842,176 → 52,445,696
    # global layer (5): qkv (16 + 2 × 2) × 512 = 10,240 × 2,816 = 28,835,840; o 2,816 × 8,192 =
    #   23,068,672; q/k norms 1,024; MLP 17,842,176 → 69,747,712
    # every layer: 4 norms 11,264; router 128 × 2,816 = 360,448, scale 2,816, per-expert 128;
    #   experts 128 × 3 × 704 × 2,816 = 761,266,176; 3 norms 8,448 → 761,649,280
    # embed 262,144 × 2,816 = 738,197,504 (tied); final norm 2,816
    # → 1,311,142,400 + 348,738,560 + 22,849,478,400 + 738,197,504 + 2,816 = 25,247,559,680
    # The vision tower (transformers' Gemma4VisionModel, replicated on every rank): hidden 1,152,
    # 27 layers, 16 heads × 72, MLP 4,304, patch 16, position table 10,240:
    #   patch proj 1,152 × 768 = 884,736; position table 2 × 10,240 × 1,152 = 23,592,960
    #   per layer: q, k, v, o 4 × 1,152² = 5,308,416; q/k norms 144; gate, up 2 × 1,152 × 4,304
    #   = 9,916,416; down 4,304 × 1,152 = 4,958,208; 4 norms 4,608 → 20,187,792 × 27 = 545,070,384
    #   embed_vision 2,816 × 1,152 = 3,244,032 → 572,792,112 parameters, + 2 × 1,152 std buffers
    vision = 884_736 + 23_592_960 + 545_070_384 + 3_244_032
    a = _adapter(config_dict("google--gemma-4-26B-A4B.json"))
    assert a.total_params() == 25_247_559_680 + vision
    wb = weight_bytes_per_rank(a.weight_tensors(GraphContext()), model_dtype="bfloat16")
    # + rope caches 262,144 × 256 × 2 + 262,144 × 512 × 2 = 402,653,184, 30 layer scalars (60 B)
    # and the two vision standardisation buffers (2 × 1,152 × 2 B); the plain device tensors and
    # scalars (oracle fixture google-gemma-4-26B-A4B.derived-text): v_norm ones (25 × 256 + 5 × 512)
    # × 2 = 17,920, router norm ones 30 × 2,816 × 2 = 168,960, router root_size 60, the attention
    # scales 30 × 16 = 480, the normalizer 2 → 187,422
    # + the tower's fp32 rotary inv_freq / original_inv_freq (2 × 18 × 4 = 144) and the embedder's
    # has_weight=False RMSNorm ones (1,152 × 2 = 2,304), oracle fixture google-gemma-4-26B-A4B.tp1
    assert wb.total_bytes == 50_495_119_360 + 2 * vision + 402_653_184 + 60 + 4_608 + 187_422 + 144 + 2_304
    # = 48.47 GiB of tensors; priced as the CUDA allocator rounds them (2 MiB segments for the
    # large ones), 48.494 GiB: log 061 (0.19.x, bf16, A100) prints "Model loading took 48.5 GiB"
    assert round(wb.total_bytes / GIB, 2) == 48.47
    rounded = weight_bytes_per_rank(a.weight_tensors(GraphContext()), model_dtype="bfloat16", allocator_rounding=True)
    assert abs(rounded.total_bytes / GIB - 48.5) < 0.01
    text_only = weight_bytes_per_rank(
        a.weight_tensors(GraphContext(limit_mm_per_prompt=(("image", 0), ("video", 0)))), model_dtype="bfloat16")
    assert round(text_only.total_bytes / GIB, 2) == 47.40  # --limit-mm-per-prompt 0: no tower


def test_llama4_scout_text_parameters(config_dict):
    # per layer: qkv (40 + 16) × 128 = 7,168 × 5,120 = 36,700,160; o 5,120 × 5,120 = 26,214,400;
    #   router 16 × 5,120 = 81,920; experts 16 × 3 × 5,120 × 8,192 = 2,013,265,920;
    #   shared expert 3 × 5,120 × 8,192 = 125,829,120; 2 norms 10,240 → 2,202,101,760 × 48
    #   = 105,700,884,480; embed + head 2 × 202,048 × 5,120 = 2,068,971,520; norm 5,120
    # → 107,769,861,120; the vision tower (1,408 wide, 34 layers, MLP 5,632): per layer qkv 4,224 ×
    #   1,408 + 4,224, o 1,408² + 1,408, fc1 / fc2 2 × 5,632 × 1,408 + 5,632 + 1,408, 2 LayerNorms
    #   5,632 → 23,807,872 × 34 = 809,467,648; patch 1,408 × 588 = 827,904; class 1,408; 577
    #   positions × 1,408 = 812,416; pre/post LN 5,632; adapter 4,096 × 5,632 + 4,096²
    #   = 39,845,888; projector 5,120 × 4,096 = 20,971,520 → 871,932,416 (the published 109B in all)
    a = _adapter(config_dict("meta-llama--Llama-4-Scout-17B-16E-Instruct.json"))
    assert a.total_params() == 107_769_861_120 + 871_932_416


@given(tp=st.sampled_from([1, 2, 4, 8]))
def test_sharded_tensors_sum_back_over_ranks(tp):
    # Property: with KV heads >= tp, the TP-split tensors (linear, expert, embedding, head)
    # of one rank times tp give the TP 1 elements.
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "registry" / "models"
    for name in ("openai--gpt-oss-120b.json", "google--gemma-2-9b.json", "meta-llama--Llama-4-Scout-17B-16E-Instruct.json"):
        a = _adapter(json.loads((root / name).read_text()))

        def split(ctx):
            # (expert biases are left out: the down projection's bias is whole on every rank)
            return sum(t.elements for t in a.weight_tensors(ctx)
                       if t.kind in ("linear", "expert", "embedding", "lm_head") and not t.name.endswith("_bias"))

        assert split(GraphContext(tensor_parallel_size=tp)) * tp == split(GraphContext())


def test_pipeline_stages_split_layers(config_dict):
    # gpt-oss builds embedding, norm and head on every stage; layers split 18 / 18
    a = _adapter(config_dict("openai--gpt-oss-120b.json"))
    s0 = a.weight_tensors(GraphContext(pipeline_parallel_size=2, pipeline_rank=0))
    s1 = a.weight_tensors(GraphContext(pipeline_parallel_size=2, pipeline_rank=1))
    assert {t.kind for t in s0} >= {"embedding", "lm_head"} and {t.kind for t in s1} >= {"embedding", "lm_head"}
    specs0 = a.kv_cache_specs(GraphContext(pipeline_parallel_size=2, pipeline_rank=0))
    specs1 = a.kv_cache_specs(GraphContext(pipeline_parallel_size=2, pipeline_rank=1))
    assert len(specs0) == len(specs1) == 18 and not set(specs0) & set(specs1)


def test_layer_type_defaults():
    assert gemma_layer_types({"num_hidden_layers": 4}, default_pattern=2) == [
        "sliding_attention", "full_attention", "sliding_attention", "full_attention"]
    assert gemma_layer_types({"num_hidden_layers": 7, "sliding_window_pattern": 3}, default_pattern=6) == [
        "sliding_attention", "sliding_attention", "full_attention"] * 2 + ["sliding_attention"]
    assert llama4_no_rope_layers({"num_hidden_layers": 8, "no_rope_layers": []}) == [1, 1, 1, 0] * 2
    assert llama4_no_rope_layers({"num_hidden_layers": 2, "no_rope_layers": [0, 1]}) == [0, 1]


def test_bad_tensor_parallel_sizes(config_dict):
    a = _adapter(config_dict("google--gemma-2-9b.json"))
    with pytest.raises(UsageError):
        a.validate_parallel(GraphContext(tensor_parallel_size=3))
    g4 = _adapter(config_dict("google--gemma-4-26B-A4B.json"))
    g4.validate_parallel(GraphContext(tensor_parallel_size=2))
    with pytest.raises(UsageError):  # 2 global KV heads and tp 3
        g4.validate_parallel(GraphContext(tensor_parallel_size=3))
    # 128 experts over 4 x 3 = 12 expert-parallel ranks do not divide: vLLM's linear placement
    # gives the first 128 % 12 = 8 ranks one more (10 + 1 = 11); the fuller rank is reported.
    t = _adapter(config_dict("openai--gpt-oss-120b.json")).weight_tensors(
        GraphContext(tensor_parallel_size=4, enable_expert_parallel=True, data_parallel_size=3))
    w13 = next(x for x in t if x.kind == "expert" and "w13" in x.name and "bias" not in x.name)
    assert w13.count == 11 * 36
