"""Quantization schemes and the allocator law, computed by hand."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmemplan.core.errors import ModelConfigError, UsageError
from vmemplan.core.graph import WeightTensor as W
from vmemplan.laws.quant import (
    BitsAndBytesScheme,
    Fp8Scheme,
    Mxfp4Scheme,
    NvFp4Scheme,
    W8A8Scheme,
    WeightOnlyIntScheme,
    marlin_padded_nk,
)
from vmemplan.laws.quant_config import scheme_for
from vmemplan.laws.weights import cuda_allocated_bytes, weight_bytes_per_rank

MiB = 1 << 20
GiB = 1 << 30


# -- the allocator ---------------------------------------------------------------------
def test_allocator_rounding_by_hand():
    assert cuda_allocated_bytes(0) == 0
    assert cuda_allocated_bytes(1) == 512  # minimum block
    assert cuda_allocated_bytes(9_216) == 9_216  # Qwen2-7B qkv bias: 18 × 512
    assert cuda_allocated_bytes(8 * MiB) == 8 * MiB  # below 10 MiB: carved from a shared segment
    # Qwen2-7B gate_up 37,888 × 3,584 × 2 = 271,581,184 B = 259.0 MiB; segment 260 MiB leaves
    # exactly 1 MiB, which is not > 1 MiB, so the block is not split: 272,629,760 counted.
    assert cuda_allocated_bytes(271_581_184) == 272_629_760
    # Qwen2-7B o_proj 3,584² × 2 = 25,690,112 = 24.5 MiB; segment 26 MiB leaves 1.5 MiB: split.
    assert cuda_allocated_bytes(25_690_112) == 25_690_112
    # Llama shapes are whole 2 MiB multiples: no slack.
    assert cuda_allocated_bytes(4096 * 14336 * 2) == 4096 * 14336 * 2


@given(st.integers(min_value=1, max_value=1 << 36))
def test_allocator_never_undercounts_and_slack_is_bounded(n):
    got = cuda_allocated_bytes(n)
    assert n <= got <= n + MiB + 512
    assert got % 512 == 0


def test_qwen2_7b_puzzle_explained():
    # Qwen2.5-7B at TP1: params 7,615,616,512 × 2 B = 15,231,233,024 plus a 32,768 × 128 × 2
    # rotary cache = 15,239,621,632 B = 14.1930 GiB, logged 14.2488 (logs 001, 047).
    # Per layer slack: qkv 4,608 × 3,584 × 2 = 33,030,144 (15.75 MiB → 0.25 MiB unsplit tail)
    # +524,288; gate_up +1,048,576 (above); down 3,584 × 18,944 × 2 = 135,790,592 (129.5 MiB
    # ... 64.75 × 2 MiB → tail 0.5 MiB) +524,288; o_proj split → 0.  28 layers × 2,097,152 =
    # 58,720,256; embedding and lm_head 152,064 × 3,584 × 2 = 1,089,994,752 (519.75 × 2 MiB)
    # +524,288 each.  15,239,621,632 + 58,720,256 + 1,048,576 = 15,299,390,464 B = 14.24868 GiB;
    # the remaining 0.13 MB (0.0001 GiB) are sub-KiB buffers (each Attention's four fp32 scales).
    assert cuda_allocated_bytes(33_030_144) - 33_030_144 == 524_288
    assert cuda_allocated_bytes(135_790_592) - 135_790_592 == 524_288
    assert cuda_allocated_bytes(1_089_994_752) - 1_089_994_752 == 524_288
    assert abs(15_299_390_464 / GiB - 14.2488) < 2e-4
    assert abs(15_239_621_632 / GiB - 14.2488) > 0.05  # the plain sum misses by 0.056 GiB


# -- schemes by hand ----------------------------------------------------------------------
def _bytes(scheme, t: W, width: int = 2) -> int:
    return weight_bytes_per_rank([t], model_dtype="float16", scheme=scheme).total_bytes


def test_awq_gemm_linear_by_hand():
    # Qwen2.5-14B down_proj: N 5120, K 13824, 4 bits, group 128, zero point.
    # qweight int32 [13824, 5120/8] = 13824 × 640 × 4 = 35,389,440
    # scales fp16 [108, 5120] = 1,105,920; qzeros int32 [108, 640] = 276,480
    s = WeightOnlyIntScheme(name="awq", bits=4, group_size=128, zero_point=True, marlin=False)
    t = W("mlp.down_proj", "linear", 5120, 13824, 1, True)
    assert _bytes(s, t) == 35_389_440 + 1_105_920 + 276_480


def test_gptq_marlin_act_order_keeps_g_idx_and_sort_indices():
    # 4096 × 4096, 4-bit g128, act-order, symmetric: qweight 8 MiB, scales 32×4096×2 = 262,144,
    # g_idx + sort indices 2 × 4096 × 4 = 32,768, no zeros.
    s = WeightOnlyIntScheme(name="gptq", bits=4, group_size=128, act_order=True, marlin=True)
    assert _bytes(s, W("o_proj", "linear", 4096, 4096, 1, True)) == 8 * MiB + 262_144 + 32_768


def test_marlin_pads_awkward_shapes():
    # n 5120 k 1000 g128: candidates (5120, 1024) and (5120, 1024): k → 1024
    assert marlin_padded_nk(5120, 1000, 128) == (5120, 1024)
    assert marlin_padded_nk(4096, 4096, 128) == (4096, 4096)
    assert marlin_padded_nk(100, 256) == (128, 256)  # (128,256) vs (128,256)


def test_fp8_block_scales_by_hand():
    # DeepSeek kv_b_proj at TP8: [4096, 512] fp8 = 2,097,152 B; scales fp32
    # [ceil(4096/128)=32, ceil(512/128)=4] = 512 B.
    s = Fp8Scheme(name="fp8", strategy="block")
    assert s.tensor_bytes(W("kv_b_proj", "linear", 4096, 512, 1, True), 2) == 2_097_152 + 512
    # a merged w13 with I = 192 per partition (not a multiple of 128): vLLM 0.33 refines the
    # scale grid to gcd(128, 128, 192, 256) = 64 (fused_moe/oracle/fp8.py::
    # refine_fp8_moe_block_shape): 2 shards × ceil(192/64) = 6 rows × ceil(256/64) = 4 cols
    t = W("mlp.experts.w13_weight", "expert", 384, 256, 3, True, allocations=1)
    assert s.tensor_bytes(t, 2) == 3 * 384 * 256 + 3 * 6 * 4 * 4
    # I = 256 per partition divides the block: the checkpoint's 128 grid stays
    t = W("mlp.experts.w13_weight", "expert", 512, 256, 3, True, allocations=1)
    assert s.tensor_bytes(t, 2) == 3 * 512 * 256 + 3 * 4 * 2 * 4


def test_fp8_per_tensor_and_per_channel():
    t = W("o_proj", "linear", 1000, 1000, 2, True)
    assert Fp8Scheme(name="t", strategy="tensor").tensor_bytes(t, 2) == 2 * (1_000_000 + 4)
    assert Fp8Scheme(name="c", strategy="channel").tensor_bytes(t, 2) == 2 * (1_000_000 + 4_000)


def test_w8a8_asymmetric_keeps_azp_adj():
    s = W8A8Scheme(name="int8", per_channel=True, static_input=True, asymmetric_input=True)
    # weight 100 × 64; scale 100 × 4; input scale 4; input zero point 4; azp_adj 100 × 4
    assert s.tensor_bytes(W("q", "linear", 100, 64, 1, True), 2) == 6400 + 400 + 4 + 4 + 400


def test_nvfp4_swizzled_scales_by_hand():
    # N 100, K 64: weight 100 × 32 = 3,200; scales padded to [128, round_up(4,4)=4] = 512 fp8;
    # global weight scale, input global scale, alpha: 3 × 4 B.
    s = NvFp4Scheme(name="nvfp4")
    assert s.tensor_bytes(W("q", "linear", 100, 64, 1, True), 2) == 3200 + 512 + 12


def test_mxfp4_gpt_oss_expert_by_hand():
    # gpt-oss w13 for 128 experts, I = H = 2880, Marlin pads I → 2944, H → 3072:
    # weight 128 × 5888 × 3072 / 2 = 1,157,627,904; scales 128 × 5888 × 96 = 72,351,744
    s = Mxfp4Scheme(name="mxfp4", backend="marlin")
    w13 = W("mlp.experts.w13_weight", "expert", 5760, 2880, 128, True, allocations=1)
    assert s.tensor_bytes(w13, 2) == 1_157_627_904 + 72_351_744
    # w2: [H 3072, I 2944]: 128 × 3072 × 1472 + 128 × 3072 × 92
    w2 = W("mlp.experts.w2_weight", "expert", 2880, 2880, 128, True, allocations=1)
    assert s.tensor_bytes(w2, 2) == 128 * 3072 * 1472 + 128 * 3072 * 92
    # attention stays 16-bit under mxfp4
    assert s.tensor_bytes(W("qkv_proj", "linear", 5120, 2880, 1, True), 2) is None


def _gpt_oss(layers: int, experts: int) -> list[W]:
    # vllm/model_executor/models/gpt_oss.py at TP1: qkv (64 + 2·8) heads × 64 = 5120 rows with
    # bias, o_proj [2880, 4096] with bias, sinks [64], router [E, 2880] with bias, experts.
    h, i, v = 2880, 2880, 201088
    return [
        W("model.embed_tokens", "embedding", v, h),
        W("attn.qkv_proj", "linear", 5120, h, layers), W("attn.qkv_proj.bias", "bias", 5120, 1, layers),
        W("attn.o_proj", "linear", h, 4096, layers), W("attn.o_proj.bias", "bias", h, 1, layers),
        W("attn.sinks", "norm", 64, 1, layers), W("norms", "norm", h, 1, 2 * layers),
        W("mlp.router", "router", experts, h, layers), W("mlp.router.bias", "bias", experts, 1, layers),
        W("mlp.experts.w13_weight", "expert", 2 * i, h, experts * layers, True, allocations=layers),
        W("mlp.experts.w13_bias", "expert", 2 * i, 1, experts * layers, True, allocations=layers),
        W("mlp.experts.w2_weight", "expert", h, i, experts * layers, True, allocations=layers),
        W("mlp.experts.w2_bias", "expert", h, 1, experts * layers, True, allocations=layers),
        W("model.norm", "norm", h, 1), W("lm_head", "lm_head", v, h),
        W("rotary_emb.cos_sin_cache", "buffer", 131072, 64),  # yarn ×32 over 4096
    ]


@pytest.mark.parametrize(("layers", "experts", "logged", "sm", "release"), [
    (36, 128, 65.9651, 9, (0, 10, 1)),  # log 013: gpt-oss-120b, one H100, vLLM 0.10.1, Marlin FP4
    (24, 32, 13.7193, 12, (0, 13, 0)),  # log 037: gpt-oss-20b, GB10, vLLM 0.13, "Using Marlin backend"
])
def test_mxfp4_prices_gpt_oss_logs(layers, experts, logged, sm, release):
    s = scheme_for({"quant_method": "mxfp4"}, sm_major=sm, vllm_version=release)
    assert s.backend == "marlin"
    got = weight_bytes_per_rank(_gpt_oss(layers, experts), model_dtype="bfloat16", scheme=s,
                                allocator_rounding=True).total_bytes / GiB
    assert abs(got - logged) / logged < 0.005


def test_deepseek_v3_tp8_seed_example():
    # Seed 002: DeepSeek-V3 fp8 (128×128 blocks) at TP 8 ≈ 78.2 GiB a rank (within 2 %).
    # Tensors as vllm/model_executor/models/deepseek_v2.py builds them at TP8 (16 heads a rank):
    h, layers, dense, moe = 7168, 61, 3, 58
    t = [
        W("embed", "embedding", 129280 // 8, h), W("lm_head", "lm_head", 129280 // 8, h),
        W("fused_qkv_a_proj", "linear", 1536 + 576, h, layers, True),       # replicated
        W("q_b_proj", "linear", 16 * 192, 1536, layers, True),
        W("kv_b_proj", "linear", 16 * 256, 512, layers, True),
        W("o_proj", "linear", h, 16 * 128, layers, True),
        W("norms", "norm", h, 1, 2 * layers), W("q_a+kv_a norms", "norm", 1536 + 512, 1, layers),
        W("mlp.gate_up_proj", "linear", 2 * 18432 // 8, h, dense, True),
        W("mlp.down_proj", "linear", h, 18432 // 8, dense, True),
        W("mlp.gate", "router", 256, h, moe), W("mlp.gate.bias", "router", 256, 1, moe, dtype="float32"),
        W("mlp.shared_experts.gate_up_proj", "linear", 2 * 2048 // 8, h, moe, True),
        W("mlp.shared_experts.down_proj", "linear", h, 2048 // 8, moe, True),
        W("mlp.experts.w13_weight", "expert", 2 * 256, h, 256 * moe, True, allocations=moe),
        W("mlp.experts.w2_weight", "expert", h, 256, 256 * moe, True, allocations=moe),
    ]
    # experts alone: 58 × 256 × (512 + 256) × 7168 B = 81,738,252,288 B = 76.1 GiB
    s = scheme_for({"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "dynamic"})
    got = weight_bytes_per_rank(t, model_dtype="bfloat16", scheme=s, allocator_rounding=True).total_bytes / GiB
    assert abs(got - 78.2) / 78.2 < 0.02


def test_bnb_4bit_double_quant_by_hand():
    # 4096 × 4096 nf4: 8 MiB of packed weight; 262,144 blocks of 64 → uint8 absmax 262,144 B,
    # nested fp32 absmax per 256 blocks 1,024 × 4; nested code 1 KiB, offset 4, code 64.
    s = BitsAndBytesScheme(name="bnb", bits=4, double_quant=True)
    assert s.tensor_bytes(W("o_proj", "linear", 4096, 4096, 1, True), 2) == (
        8 * MiB + 262_144 + 4_096 + 1_024 + 4 + 64)
    s8 = BitsAndBytesScheme(name="bnb8", bits=8)
    assert s8.tensor_bytes(W("o_proj", "linear", 4096, 4096, 1, True), 2) == 16 * MiB + 4096 * 4


# -- exclusions and dispatch ----------------------------------------------------------------
def test_fp8_exact_ignore_list_keeps_named_layers_wide():
    # modules_to_not_convert names layer 0's q/k/v: its fused qkv_proj stays bf16.
    s = scheme_for({"quant_method": "fp8", "weight_block_size": [128, 128],
                    "modules_to_not_convert": ["model.layers.0.self_attn.q_proj",
                                               "model.layers.0.self_attn.k_proj",
                                               "model.layers.0.self_attn.v_proj", "lm_head"]})
    t = W("self_attn.qkv_proj", "linear", 256, 256, 3, True)
    parts = s.tensor_parts(t, 2)
    # 2 quantized layers (65,536 B + 2×2 scales × 4 B) and 1 bf16 layer (131,072 B)
    assert s.tensor_bytes(t, 2) == 2 * (65_536 + 16) + 131_072
    assert ("weight(unquantized)", 131_072, 1) in parts
    assert s.tensor_parts(W("lm_head", "lm_head", 10, 10), 2) is None


def test_compressed_tensors_regex_ignore():
    qc = {"quant_method": "compressed-tensors", "ignore": ["lm_head", "re:.*self_attn.*"],
          "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int",
                                  "strategy": "group", "group_size": 128, "symmetric": True},
                                  "input_activations": None}}}
    s = scheme_for(qc)
    assert s.tensor_bytes(W("self_attn.o_proj", "linear", 128, 128, 4, True), 2) == 4 * 128 * 128 * 2
    # packed int4 weight, one bf16 scale per group of 128, and the int64[2] weight_shape
    # (compressed_tensors_wNa16.py::CompressedTensorsWNA16.create_weights)
    assert s.tensor_bytes(W("mlp.down_proj", "linear", 128, 128, 1, True), 2) == 128 * 128 // 2 + 128 * 2 + 16


@pytest.mark.parametrize(("qc", "flag", "cls", "name"), [
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, None, Fp8Scheme, "fp8 block"),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, None, WeightOnlyIntScheme, "marlin"),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, "awq", WeightOnlyIntScheme, "gemm"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": True}, None, WeightOnlyIntScheme, "act-order"),
    ({"quant_method": "mxfp4"}, None, Mxfp4Scheme, "mxfp4"),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, None, BitsAndBytesScheme, "8-bit"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, None, NvFp4Scheme, "nvfp4"),
    (None, "fp8", Fp8Scheme, "online"),
])
def test_scheme_for_dispatch(qc, flag, cls, name):
    s = scheme_for(qc, None, flag)
    assert isinstance(s, cls) and name in s.name and s.describe()


def test_hf_quant_config_json_extra_file():
    hq = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8", "exclude_modules": ["lm_head"]}}
    s = scheme_for(None, {"hf_quant_config.json": hq})
    assert isinstance(s, Fp8Scheme) and s.static_input and "hf_quant_config.json" in s.describe()


def test_no_quantization_is_none_and_bad_input_raises():
    assert scheme_for(None) is None
    with pytest.raises(ModelConfigError):
        scheme_for({"quant_method": "mystery"})
    with pytest.raises(UsageError):
        scheme_for(None, None, "awq")  # AWQ needs an AWQ checkpoint
