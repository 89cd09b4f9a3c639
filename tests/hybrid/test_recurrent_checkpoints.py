"""Prefill-checkpoint pages of the recurrent layers, per layer type and release.

Expected figures are derived here from vLLM's own formulas (0.33.0 unless stated):

* state page: vllm/model_executor/layers/mamba/mamba_utils.py::MambaStateShapeCalculator.
  mamba2_state_shape (conv ``(kernel - 1) x (I + 2 G N) / tp`` at the model dtype, SSM
  ``heads / tp x head_dim x N`` at float32 for Nemotron-H);
* block size: vllm/platforms/interface.py::Platform._align_hybrid_block_size,
  ``align * cdiv(mamba_page, align * attention_page_1_token)`` with ``align = 16`` (FLASH_ATTN):
  Mamba-2 declares no ``get_prefill_checkpoint_alignment`` so
  layers/mamba/abstract.py::get_mamba_prefill_checkpoint_alignment is None and the checkpoint
  does not touch the alignment;
* pages a request: vllm/v1/kv_cache_interface.py::MambaSpec.max_memory_usage_bytes, "align"
  mode ``2 + num_speculative_blocks + num_prefill_checkpoint_blocks`` pages, with
  layers/mamba/mamba_mixer2.py::MambaMixer2.get_kv_cache_spec setting
  ``num_prefill_checkpoint_blocks=1`` (from the 0.32.0 wheel on; absent from 0.31.0's);
  FullAttentionSpec.max_memory_usage_bytes ``cdiv(L, block)`` pages;
* pool: vllm/v1/core/kv_cache_utils.py::get_num_blocks ``avail // (group_size x page)``,
  get_max_concurrency_for_kv_cache_config ``num_blocks / pages per request``,
  get_kv_cache_capacity ``int(concurrency x L)``.

The numbers agree with vLLM 0.33.0's own functions run on the meta device (the oracle fixtures
``nvidia-Nemotron-H-56B-Base-8K.tp{1,8}``, ``nvidia-NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.tp{1,8}``
at 40 GiB: 254 / 2,032 / 3,335 / 26,479 blocks; 104,038 / 832,307 / 3,902,902 / 11,568,851 tokens).
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import CONFIGS
from vmemplan.laws.kv_pool import PoolContext, plan_pool
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import GraphContext, adapter_for

AVAIL = 40 * 2**30


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def _expected(cfg: dict, tp: int, max_len: int, *, checkpoint_pages: int) -> dict:
    heads, hd, groups, n = cfg["mamba_num_heads"], cfg["mamba_head_dim"], cfg["n_groups"], cfg["ssm_state_size"]
    inner = heads * hd
    conv = (cfg["conv_kernel"] - 1) * (inner + 2 * groups * n) // tp * 2  # bf16
    ssm = heads // tp * hd * n * 4  # float32
    mamba_page = conv + ssm
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    attn_tok = 2 * max(1, cfg["num_key_value_heads"] // tp) * head_dim * 2
    align = 16
    block = align * cdiv(mamba_page, align * attn_tok)
    page = block * attn_tok
    pattern = cfg["hybrid_override_pattern"]
    n_attn, n_mamba = pattern.count("*"), pattern.count("M")
    group_size = min(n_attn, n_mamba)
    mamba_groups = cdiv(n_mamba, group_size)
    num_blocks = AVAIL // (group_size * page)
    per_request = cdiv(max_len, block) + mamba_groups * (2 + 0 + checkpoint_pages)
    return {"block": block, "mamba_page": mamba_page, "num_blocks": num_blocks, "per_request": per_request,
            "tokens": int(num_blocks / per_request * max_len)}


def _plan(name: str, tp: int, max_len: int, version: tuple[int, ...] | None):
    adapter = adapter_for(ModelConfig.from_dict(_config(name)))
    ctx = GraphContext(tensor_parallel_size=tp, max_model_len=max_len, sm_major=9, vllm_version=version)
    block = adapter.resolve_block_size(ctx, user_block_size=None, default=16)
    specs = adapter.kv_cache_specs(ctx)
    return block, specs, plan_pool(specs, AVAIL, PoolContext(max_model_len=max_len, max_num_batched_tokens=8192))


CASES = [
    ("nvidia--Nemotron-H-56B-Base-8K", 1, 8192, (254, 104_038)),
    ("nvidia--Nemotron-H-56B-Base-8K", 8, 8192, (2_032, 832_307)),
    ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 1, 32768, (3_335, 3_902_902)),
    ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 8, 32768, (26_479, 11_568_851)),
]


@pytest.mark.parametrize("name, tp, max_len, oracle", CASES)
def test_mamba2_holds_a_prefill_checkpoint_page_in_align_mode(name, tp, max_len, oracle):
    exp = _expected(_config(name), tp, max_len, checkpoint_pages=1)
    block, specs, p = _plan(name, tp, max_len, (0, 33, 0))
    assert block == exp["block"]
    mamba = next(s for s in specs.values() if s.kind == "mamba")
    assert mamba.num_prefill_checkpoint_blocks == 1
    assert mamba.page_bytes_unpadded == exp["mamba_page"]
    assert (p.num_blocks, p.blocks_per_request, p.kv_cache_tokens) == (
        exp["num_blocks"], exp["per_request"], exp["tokens"])
    assert (p.num_blocks, p.kv_cache_tokens) == oracle  # vLLM 0.33.0's functions (oracle fixtures)


@pytest.mark.parametrize("name, tp, max_len, oracle", CASES)
def test_before_the_checkpoint_release_two_pages_and_the_same_block(name, tp, max_len, oracle):
    exp = _expected(_config(name), tp, max_len, checkpoint_pages=0)
    block, specs, p = _plan(name, tp, max_len, (0, 21, 0))
    assert block == exp["block"]  # the checkpoint never changed the alignment
    assert next(s for s in specs.values() if s.kind == "mamba").num_prefill_checkpoint_blocks == 0
    assert (p.num_blocks, p.blocks_per_request) == (exp["num_blocks"], exp["per_request"])


def test_0_32_already_holds_the_mamba2_checkpoint():
    exp = _expected(_config("nvidia--Nemotron-H-56B-Base-8K"), 1, 8192, checkpoint_pages=1)
    _, _, p = _plan("nvidia--Nemotron-H-56B-Base-8K", 1, 8192, (0, 32, 0))
    assert p.blocks_per_request == exp["per_request"]


def test_prefix_caching_off_holds_no_checkpoint():
    # "none" mode: MambaSpec.max_memory_usage_bytes is 1 + speculative pages; the mamba block is L
    adapter = adapter_for(ModelConfig.from_dict(_config("nvidia--Nemotron-H-56B-Base-8K")))
    ctx = GraphContext(max_model_len=8192, enable_prefix_caching=False, sm_major=9)
    assert all(s.num_prefill_checkpoint_blocks == 0 for s in adapter.kv_cache_specs(ctx).values()
               if s.kind == "mamba")


@pytest.mark.parametrize("name", ["ai21labs--Jamba-v0.1", "moonshotai--Kimi-Linear-48B-A3B-Instruct"])
def test_layers_without_checkpoint_export_hold_none(name):
    # Mamba-1 (MambaMixer) and Kimi's gated-delta layers (KimiGatedDeltaNetAttention) keep
    # MambaBase.get_kv_cache_spec: num_prefill_checkpoint_blocks = 0 (0.33.0)
    adapter = adapter_for(ModelConfig.from_dict(_config(name)))
    ctx = GraphContext(max_model_len=8192, sm_major=9)
    mamba = [s for s in adapter.kv_cache_specs(ctx).values() if s.kind == "mamba"]
    assert mamba and all(s.num_prefill_checkpoint_blocks == 0 for s in mamba)


def test_gdn_checkpoint_is_0_33_only():
    # QwenGatedDeltaNetAttention exports checkpoints from 0.33.0 (absent from 0.32.0's
    # qwen_gdn_linear_attn.py): before it, no page and no 64-token alignment
    adapter = adapter_for(ModelConfig.from_dict(_config("Qwen--Qwen3-Next-80B-A3B-Thinking")))
    new = GraphContext(max_model_len=8192, sm_major=9, vllm_version=(0, 33, 0))
    old = GraphContext(max_model_len=8192, sm_major=9, vllm_version=(0, 32, 0))
    ck = {c: {s.num_prefill_checkpoint_blocks for s in adapter.kv_cache_specs(c).values() if s.kind == "mamba"}
          for c in (new, old)}
    assert ck[new] == {1} and ck[old] == {0}
    assert adapter.resolve_block_size(new, user_block_size=None, default=16) % 64 == 0
