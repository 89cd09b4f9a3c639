"""Tests for vmemplan.laws.activation: worked examples by hand and monotonic properties."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vmemplan.laws.activation import ActivationConstants, activation_peak_bytes

GIB = 1 << 30

# The 0.33.0-era constants as the registry states them (triton sampler, 3 fp32 copies).
C033 = ActivationConstants(
    era="test-0.33",
    vllm_version="0.33.0",
    dense_hidden_buffers=3,
    dense_intermediate_buffers=3,
    moe_buffers_by_tp={1: 22, 2: 13, 4: 10, 8: 10},
    floor_bytes=70 * (1 << 20),
    sampler_path="triton",
    sampler_fp32_copies=3,
)
# The 0.11-era native torch-sort sampler (9 fp32 copies).
C011 = C033.model_copy(update={"era": "test-0.11", "sampler_path": "native_sort", "sampler_fp32_copies": 9})

LLAMA8B = dict(
    family="dense", hidden_size=4096, num_attention_heads=32, head_dim=128,
    intermediate_size=14336, vocab_size=128256, dtype_bytes=2,
)


def test_llama31_8b_h100_mnbt8192_seqs256():
    est = activation_peak_bytes(
        **LLAMA8B, tensor_parallel_size=1, max_num_batched_tokens=8192, max_num_seqs=256, constants=C033
    )
    # forward = 8192 tokens x 2 B x (3 x 4096 + 3 x 14336) = 8192 x 2 x 55296 = 905,969,664 B (0.84375 GiB)
    assert est.forward_bytes == 905_969_664
    # sampler = 256 rows x 128256 vocab x (2 + 3 x 4) B = 32,833,536 x 14 = 459,669,504
    #         + held hidden states 8192 x 4096 x 2 = 67,108,864          -> 526,778,368
    assert est.sampler_bytes == 526_778_368
    # peak = max(forward, sampler) = forward
    assert est.peak_bytes == 905_969_664


def test_llama31_8b_a100_mnbt2048_native_sampler_dominates():
    est = activation_peak_bytes(
        **LLAMA8B, tensor_parallel_size=1, max_num_batched_tokens=2048, max_num_seqs=256, constants=C011
    )
    # forward = 2048 x 2 x 55296 = 226,492,416
    assert est.forward_bytes == 226_492_416
    # sampler = 32,833,536 x (2 + 36) = 1,247,674,368 + 2048 x 4096 x 2 = 16,777,216 -> 1,264,451,584
    assert est.sampler_bytes == 1_264_451_584
    assert est.peak_bytes == 1_264_451_584  # = 1.178 GiB; corpus 040 (0.11.0, A100 40GB) leaves 1.398 - 0.25 = 1.148 GiB


def test_tp2_splits_only_the_intermediate_buffers():
    est = activation_peak_bytes(
        **LLAMA8B, tensor_parallel_size=2, max_num_batched_tokens=8192, max_num_seqs=1, constants=C033
    )
    # 8192 x 2 x (3 x 4096 + 3 x 14336 / 2) = 8192 x 2 x (12288 + 21504) = 553,648,128
    assert est.forward_bytes == 553_648_128


def test_floor_applies_to_tiny_budgets():
    est = activation_peak_bytes(
        **LLAMA8B, tensor_parallel_size=1, max_num_batched_tokens=16, max_num_seqs=1, constants=C033
    )
    # 16 x 2 x 55296 = 1,769,472 < 70 MiB floor = 73,400,320
    assert est.forward_bytes == 73_400_320


def test_moe_uses_aiconfigurator_prior():
    est = activation_peak_bytes(
        family="moe", hidden_size=2048, num_attention_heads=32, head_dim=128, intermediate_size=768,
        vocab_size=151936, tensor_parallel_size=4, max_num_batched_tokens=8192, max_num_seqs=1,
        dtype_bytes=2, constants=C033,
    )
    # C_moe[tp 4] = 10; width = 32 x 128 = 4096 -> 10 x 8192 x 4096 x 2 = 671,088,640
    assert est.forward_bytes == 671_088_640


def test_extra_model_buffers_add_to_forward():
    est = activation_peak_bytes(
        **LLAMA8B, tensor_parallel_size=1, max_num_batched_tokens=8192, max_num_seqs=256, constants=C033,
        extra_model_buffers_bytes=GIB,
    )
    assert est.peak_bytes == 905_969_664 + GIB
    assert est.extra_model_bytes == GIB


_dims = dict(
    hidden=st.integers(256, 16384), inter=st.integers(256, 65536), vocab=st.integers(1000, 300000),
)


@settings(max_examples=60, deadline=None)
@given(h=_dims["hidden"], i=_dims["inter"], v=_dims["vocab"], t=st.integers(1, 65536),
       dt=st.integers(1, 65536), seqs=st.integers(1, 2048), tp=st.sampled_from([1, 2, 4, 8]))
def test_more_tokens_never_lowers_forward(h, i, v, t, dt, seqs, tp):
    kw = dict(family="dense", hidden_size=h, num_attention_heads=32, head_dim=128, intermediate_size=i,
              vocab_size=v, tensor_parallel_size=tp, max_num_seqs=seqs, dtype_bytes=2, constants=C033)
    a = activation_peak_bytes(**kw, max_num_batched_tokens=t)
    b = activation_peak_bytes(**kw, max_num_batched_tokens=t + dt)
    assert b.forward_bytes >= a.forward_bytes
    assert b.peak_bytes >= a.peak_bytes


@settings(max_examples=60, deadline=None)
@given(h=_dims["hidden"], i=_dims["inter"], t=st.integers(1, 65536),
       tps=st.lists(st.sampled_from([1, 2, 4, 8, 16]), min_size=2, max_size=2, unique=True),
       fam=st.sampled_from(["dense", "moe"]))
def test_more_tp_never_raises_forward(h, i, t, tps, fam):
    lo, hi = sorted(tps)
    kw = dict(family=fam, hidden_size=h, num_attention_heads=32, head_dim=128, intermediate_size=i,
              vocab_size=32000, max_num_batched_tokens=t, max_num_seqs=1, dtype_bytes=2, constants=C033)
    assert (activation_peak_bytes(**kw, tensor_parallel_size=hi).forward_bytes
            <= activation_peak_bytes(**kw, tensor_parallel_size=lo).forward_bytes)


@settings(max_examples=60, deadline=None)
@given(v=_dims["vocab"], t=st.integers(1, 65536), s=st.integers(1, 4096), ds=st.integers(0, 4096),
       c=st.sampled_from([C011, C033]))
def test_more_seqs_never_lowers_sampler(v, t, s, ds, c):
    kw = dict(**{**LLAMA8B, "vocab_size": v}, tensor_parallel_size=1, max_num_batched_tokens=t, constants=c)
    assert (activation_peak_bytes(**kw, max_num_seqs=s + ds).sampler_bytes
            >= activation_peak_bytes(**kw, max_num_seqs=s).sampler_bytes)
