"""--attention-backend with a --block-size its kernels cannot page: vLLM 0.33.0's refusal.

vllm/platforms/cuda.py::CudaPlatform.get_attn_backend_cls validates a selected backend alone and
raises "Selected backend {backend} is not valid for this configuration. Reason: {reasons}"; the
reason 'block_size not supported' comes from vllm/v1/attention/backend.py::
AttentionBackend.supports_block_size (a multiple of a supported kernel size: 16 for FLASH_ATTN,
TRITON_ATTN, FLEX_ATTENTION and FLASHINFER).  The backend's own memory stays a warning.
"""

from __future__ import annotations

import pytest

from tests.request._cli import error_lines, run
from vmemplan.request.attention_backend import check_backend_block_size

MODEL = "meta-llama/Llama-3.1-8B"


def _size(args, capsys):
    return run(["size", "--gpu", "h100", "--", "vllm", "serve", MODEL, "--max-model-len", "32k", *args], capsys)


@pytest.mark.parametrize(("backend", "block", "fix"), [("FLASH_ATTN", 8, 16), ("TRITON_ATTN", 24, 32),
                                                       ("FLEX_ATTENTION", 40, 48), ("FLASHINFER", 8, 16)])
def test_block_size_the_backend_cannot_page_is_vllms_refusal(capsys, backend, block, fix):
    r = _size(["--attention-backend", backend, "--block-size", str(block)], capsys)
    assert r.code == 2
    error, hint = error_lines(r.stderr)
    assert error == (f"error: Selected backend AttentionBackendEnum.{backend} is not valid for this configuration. "
                     "Reason: ['block_size not supported']")
    assert hint.startswith(f"hint: --block-size {fix} ")


def test_multiples_of_16_start_and_the_backend_stays_a_warning(capsys):
    r = _size(["--attention-backend", "FLASHINFER", "--block-size", "32"], capsys)
    assert r.code == 0, r.stderr
    assert "not modelled: --attention-backend" in r.stdout + r.stderr


def test_cases_left_unchecked():
    # no --block-size: vLLM checks only a size the user gave; MLA backends and FA4 pages are their own
    check_backend_block_size("FLASH_ATTN", None, mla=False, sm_major=9, kv_cache_dtype="auto")
    check_backend_block_size("FLASH_ATTN", 8, mla=True, sm_major=9, kv_cache_dtype="auto")
    check_backend_block_size("FLASH_ATTN", 8, mla=False, sm_major=10, kv_cache_dtype="auto")
    check_backend_block_size("FLASHMLA", 8, mla=False, sm_major=9, kv_cache_dtype="auto")
