"""A model whose layers need one attention backend: vLLM 0.33.0's refusal when the backend in use
is another (Rnj1's chunked layers: vllm/model_executor/layers/attention/attention.py::Attention
asserts TRITON_ATTN for chunk_lookback; vLLM's selection does not pick it for them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vmemplan.core.errors import ExitCode, UsageError
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.request.attention_backend import check_required_backend, default_backend_name

ROOT = Path(__file__).resolve().parents[2]
RNJ1_CONFIG = ROOT / "tests" / "fixtures" / "oracle" / "configs" / "EssentialAI--rnj1-gemma3-defaults.synthetic.json"

RNJ1 = {
    "architectures": ["Rnj1ForCausalLM"], "model_type": "gemma3_text", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 3,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "max_position_embeddings": 2048,
    "sliding_window": 512, "layer_types": ["chunked_attention", "chunked_attention", "full_attention"],
    "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 64,
}


def test_default_backend_by_device() -> None:
    # cuda.py::_get_backend_priorities: FlashInfer first on SM 10, FlashAttention (SM 8.0+) elsewhere
    assert default_backend_name(vendor="nvidia", arch="sm_90", dtype="bfloat16") == "FLASH_ATTN"
    assert default_backend_name(vendor="nvidia", arch="sm_100", dtype="bfloat16") == "FLASHINFER"
    assert default_backend_name(vendor="nvidia", arch="sm_75", dtype="float16") == "FLASHINFER"
    assert default_backend_name(vendor="nvidia", arch="sm_70", dtype="float16") == "TRITON_ATTN"
    assert default_backend_name(vendor="nvidia", arch="sm_90", dtype="float32") == "TRITON_ATTN"
    assert default_backend_name(vendor="amd", arch="gfx942", dtype="bfloat16") == "ROCM_ATTN"


def test_rnj1_needs_triton() -> None:
    adapter = adapter_for(ModelConfig.from_dict(RNJ1))
    kw = {"vendor": "nvidia", "arch": "sm_90", "dtype": "bfloat16"}
    with pytest.raises(UsageError) as err:
        check_required_backend(None, adapter, **kw)
    assert str(err.value) == "Chunked attention with lookback requires the Triton backend, but got FLASH_ATTN."
    assert err.value.exit_code == ExitCode.USAGE and "--attention-backend TRITON_ATTN" in (err.value.hint or "")
    with pytest.raises(UsageError, match="but got FLEX_ATTENTION"):
        check_required_backend("flex_attention", adapter, **kw)
    check_required_backend("TRITON_ATTN", adapter, **kw)  # runs
    check_required_backend(None, adapter, vendor="nvidia", arch="sm_70", dtype="float16")  # vLLM picks Triton there
    # without chunked layers nothing is required
    full = adapter_for(ModelConfig.from_dict({**RNJ1, "layer_types": ["full_attention"] * 3}))
    check_required_backend(None, full, **kw)


def test_rnj1_plan_refused_then_planned() -> None:
    from vmemplan.api import plan_with_request

    with pytest.raises(UsageError, match="requires the Triton backend, but got FLASH_ATTN"):
        plan_with_request(model=str(RNJ1_CONFIG), gpu="h200", max_model_len=4096)
    _, plan = plan_with_request(model=str(RNJ1_CONFIG), gpu="h200", max_model_len=4096, attention_backend="TRITON_ATTN")
    assert plan.kv_cache.num_blocks > 0
