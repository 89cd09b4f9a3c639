"""LoRA's stacked adapter buffers (vmemplan/laws/lora.py), computed by hand."""

from __future__ import annotations

import pytest

from vmemplan.api import plan_from_flags
from vmemplan.laws.lora import LoraConfig, dense_lora_layers, lora_stacked_bytes

MODEL = "meta-llama/Llama-3.1-8B"  # hidden 4096, 32 heads, 8 KV heads, head_dim 128, intermediate 14336, 32 layers
LLAMA = dense_lora_layers(hidden_size=4096, num_heads=32, num_kv_heads=8, head_dim=128, intermediate_size=14336)


def test_llama_8b_four_adapters_of_rank_64_by_hand():
    """Per layer, bf16 (2 B), n = 4 adapters, r = 64 (vllm/lora/layers/*.py::create_lora_weights):
    qkv_proj   A: 3 slices × 4×64×4096          = 3 × 2 MiB      B: 4×64×(4096+1024+1024) = 3 MiB
    o_proj     A: 4×64×4096                     = 2 MiB          B: 4×4096×64             = 2 MiB
    gate_up    A: 2 slices × 4×64×4096          = 2 × 2 MiB      B: 4×64×(14336+14336)    = 14 MiB
    down_proj  A: 4×64×14336                    = 7 MiB          B: 4×4096×64             = 2 MiB
    = 40 MiB per layer × 32 layers = 1,342,177,280 B = 1.25 GiB."""
    b = lora_stacked_bytes(LLAMA, 32, LoraConfig(max_loras=4, max_lora_rank=64), model_dtype="bfloat16")
    assert b.per_layer_bytes == 40 * 2**20
    assert b.total_bytes == 1_342_177_280
    assert b.tensors == 32 * 14


def test_the_pool_shrinks_by_the_adapter_bytes_on_one_h100():
    base = plan_from_flags(model=MODEL, gpu="h100")
    lora = plan_from_flags(model=MODEL, gpu="h100", enable_lora=True, max_loras=4, max_lora_rank=64)
    assert lora.per_rank.weights_bytes - base.per_rank.weights_bytes == 1_342_177_280
    assert base.per_rank.available_kv_cache_bytes - lora.per_rank.available_kv_cache_bytes == 1_342_177_280
    # 1.25 GiB / (16 tokens × 131,072 B) = 640 blocks fewer
    assert base.kv_cache.num_blocks - lora.kv_cache.num_blocks == 640
    prov = {p.figure: p for p in lora.provenance}
    assert prov["weights_bytes.lora"].value == 1_342_177_280 and "create_lora_weights" in prov["weights_bytes.lora"].source


def test_tensor_parallel_and_fully_sharded():
    """TP 2: column outputs and row inputs halve; KV slices keep whole heads.  Fully sharded:
    column lora_a rows and row lora_b rows halve as well."""
    cfg = LoraConfig(max_loras=1, max_lora_rank=16)
    one = lora_stacked_bytes(LLAMA, 1, cfg, model_dtype="bfloat16").total_bytes
    two = lora_stacked_bytes(LLAMA, 1, cfg, model_dtype="bfloat16", tensor_parallel_size=2, num_kv_heads=8,
                             head_dim=128).total_bytes
    # lora_a of the column layers (5 slices × 16×4096) and lora_b of the row layers (full
    # output 4096, twice) stay whole on each rank; the rest halves (KV: 8 heads -> 4 per rank)
    a_col = 5 * 16 * 4096 * 2
    b_row = 2 * 16 * 4096 * 2
    assert one == 2_621_440 and two == 1_769_472
    assert one - a_col - b_row == 2 * (two - a_col - b_row)
    sharded = lora_stacked_bytes(LLAMA, 1, LoraConfig(max_loras=1, max_lora_rank=16, fully_sharded_loras=True),
                                 model_dtype="bfloat16", tensor_parallel_size=2, num_kv_heads=8, head_dim=128)
    assert sharded.total_bytes == one // 2


@pytest.mark.parametrize(("dtype", "width"), [("float32", 4), ("float16", 2)])
def test_lora_dtype(dtype, width):
    b = lora_stacked_bytes(LLAMA, 1, LoraConfig(max_loras=1, max_lora_rank=8, lora_dtype=dtype), model_dtype="bfloat16")
    elements = 8 * (3 * 4096 + 4096 + 2 * 4096 + 14336) + 8 * (6144 + 4096 + 28672 + 4096)
    assert b.total_bytes == elements * width


def test_lora_flags_on_the_command_line(capsys):
    import json

    from tests.request._cli import run

    r = run(["size", MODEL, "--gpu", "h100", "--enable-lora", "--max-loras", "4", "--max-lora-rank", "64",
             "--format", "json"], capsys)
    assert r.code == 0, r.stderr
    d = json.loads(r.stdout)
    assert "--enable-lora" in d["vllm_args"]["modelled"] and "--max-lora-rank" in d["vllm_args"]["modelled"]
    # Llama-3.1-8B's weights on one rank (tests/test_size_worked_example.py: 16,094,076,928 B of
    # parameters + 32 layers × 4 fp32 attention scales, each a 512 B allocator block) + the adapters
    assert d["per_rank"]["weights_bytes"] == 16_094_076_928 + 32 * 4 * 512 + 1_342_177_280
