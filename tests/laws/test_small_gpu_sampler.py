"""The L4 case (vLLM 0.11, Llama-3.1-8B, 32k context, 128 sequences): the profile run's sampler.

On a 24 GB card the batch tier is 2,048 tokens (vllm/engine/arg_utils.py::EngineArgs._set_default_args,
< 70 GiB), so the profile peak is the dummy sampler's, not the forward's, and the sampler's top-k/top-p
path decides it.  vllm/v1/sample/ops/topk_topp_sampler.py::TopKTopPSampler.__init__ (0.11.0) runs
FlashInfer's sampler whenever flashinfer is importable (``VLLM_USE_FLASHINFER_SAMPLER`` unset means
on in V1): fp32 logits, masked logits and probabilities, 3 fp32 copies of ``[rows, vocab]``.  The torch
sort path (``apply_top_k_top_p``) holds 9.  0.11.1 made FlashInfer opt-in.  Counting the sort path
for a 0.11.0 run overstated the non-weight, non-KV memory by 128 x 128,256 x 4 x 6 B = 0.37 GiB.
"""

from __future__ import annotations

import pytest

from vmemplan.api import plan

GIB = 1 << 30
ROWS, VOCAB, HIDDEN, INTER, TOKENS = 128, 128_256, 4_096, 14_336, 2_048


def _plan(version: str, sampler: str | None = None):
    return plan("meta-llama/Llama-3.1-8B", gpu="l4", vllm_version=version, max_model_len=32_768,
                max_num_seqs=ROWS, sampler=sampler)


def _sampler_bytes(fp32_copies: int) -> int:
    # GPUModelRunner._dummy_sampler_run: [rows, vocab] logits in bf16 + fp32 work arrays, while
    # profile_run still holds the forward's hidden states
    return ROWS * VOCAB * (2 + 4 * fp32_copies) + TOKENS * HIDDEN * 2


def test_0_11_0_defaults_to_flashinfer_sampler():
    p = _plan("0.11.0")
    assert p.engine.max_num_batched_tokens == TOKENS
    forward = TOKENS * 2 * (3 * HIDDEN + 3 * INTER)  # the dense forward buffer model
    assert _sampler_bytes(3) > forward
    assert p.per_rank.activation_peak_bytes == _sampler_bytes(3)


def test_the_sort_path_is_the_0_4_gib():
    fi, sort = _plan("0.11.0"), _plan("0.11.0", sampler="native_sort")
    gap = sort.per_rank.activation_peak_bytes - fi.per_rank.activation_peak_bytes
    assert gap == ROWS * VOCAB * 4 * (9 - 3)
    assert 0.35 * GIB < gap < 0.4 * GIB
    non_kv = fi.per_rank.activation_peak_bytes + fi.per_rank.non_torch_bytes
    assert non_kv < 0.5 * GIB


@pytest.mark.parametrize("version", ["0.11.1", "0.11.2", "0.13.0"])
def test_later_releases_make_flashinfer_opt_in(version):
    assert _plan(version).per_rank.activation_peak_bytes == _sampler_bytes(9)
