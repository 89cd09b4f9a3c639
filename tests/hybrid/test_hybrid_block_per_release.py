"""The hybrid attention block follows the planned release and the GPU generation (issue 11 item 5).

Qwen3.5-27B at TP 2: one gated-delta layer's state page is 1,603,584 B and one token of attention
cache 2 KV heads x 256 x 2 (K, V) x 2 B = 2,048 B.  vllm/platforms/interface.py::
Platform._align_hybrid_block_size gives ``align * cdiv(1,603,584, align * 2,048)``:

* 0.33.0 on SM 9.0: the gated-delta layers run FlashInfer's prefill
  (qwen_gdn_linear_attn.py::_resolve_gdn_prefill_backend) and export prefill checkpoints every
  64 tokens (FLASHINFER_GDN_CHECKPOINT_ALIGNMENT) in "align" mode, so align = lcm(16, 64) = 64:
  64 x cdiv(1,603,584, 131,072) = 64 x 13 = 832;
* 0.33.0 on SM 8.0 (Triton gated-delta kernel, no checkpoint alignment) and 0.32.0 anywhere (the
  gated-delta layers export no checkpoint before 0.33.0): align = 16: 16 x cdiv(1,603,584, 32,768)
  = 16 x 49 = 784.

The block size was resolved with the newest release's rules whatever --vllm-version said, so an
older H100 log's 784 was predicted as 832.
"""

from __future__ import annotations

import pytest

from vmemplan.api import plan_from_flags


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@pytest.mark.parametrize(("gpu", "version", "align"), [
    ("h100", "0.33.0", 64), ("h100", "0.32.0", 16), ("h100", "0.31.0", 16), ("a100-80g", "0.33.0", 16),
])
def test_qwen35_attention_block(gpu, version, align):
    plan = plan_from_flags(model="Qwen/Qwen3.5-27B", gpu=gpu, tensor_parallel_size=2, vllm_version=version)
    # the gated-delta state of one layer at TP 2 (mamba_utils.py::gated_delta_net_state_shape): conv
    # (4 - 1) x (2 x 16 x 128 + 48 x 128) / 2 channels in bf16, recurrent 48 / 2 x 128 x 128 in fp32
    # (the config's mamba_ssm_dtype); one token of attention: 4 / 2 KV heads x 256 x (K, V) x 2 B
    state_page = 3 * (2 * 16 * 128 + 48 * 128) // 2 * 2 + 48 // 2 * 128 * 128 * 4
    token_page = 4 // 2 * 256 * 2 * 2
    assert (state_page, token_page) == (1_603_584, 2_048)
    expected = align * _cdiv(state_page, align * token_page)
    assert expected == {64: 832, 16: 784}[align]
    assert plan.kv_cache.block_size == expected
