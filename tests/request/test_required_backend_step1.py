"""Step1 needs TRITON_ATTN: its Attention layers ask for ``use_alibi_sqrt=True``
(vllm/model_executor/models/step1.py::StepAttention) and only TritonAttentionBackend's
``supports_alibi_sqrt()`` is True, so vllm/model_executor/layers/attention/attention.py::Attention
raises "use_alibi_sqrt is not supported by backend FLASH_ATTN." on the default Hopper backend
(vLLM 0.33.0); vmemplan refuses the same way unless ``--attention-backend TRITON_ATTN``."""

from __future__ import annotations

from pathlib import Path

import pytest

from vmemplan.core.errors import ExitCode, UsageError
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.request.attention_backend import check_required_backend

ROOT = Path(__file__).resolve().parents[2]
STEP1_CONFIG = ROOT / "tests" / "fixtures" / "oracle" / "configs" / "stepfun-ai--Step1Config-defaults.synthetic.json"

STEP1 = {
    "architectures": ["Step1ForCausalLM"], "model_type": "step1", "torch_dtype": "bfloat16",
    "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 8, "num_attention_groups": 2,
    "num_hidden_layers": 3, "max_seq_len": 4096, "vocab_size": 1000, "rms_norm_eps": 1e-5,
}


def test_step1_needs_triton() -> None:
    adapter = adapter_for(ModelConfig.from_dict(STEP1))
    kw = {"vendor": "nvidia", "arch": "sm_90", "dtype": "bfloat16"}
    with pytest.raises(UsageError) as err:
        check_required_backend(None, adapter, **kw)
    assert str(err.value) == "use_alibi_sqrt is not supported by backend FLASH_ATTN."
    assert err.value.exit_code == ExitCode.USAGE and "--attention-backend TRITON_ATTN" in (err.value.hint or "")
    with pytest.raises(UsageError, match="^use_alibi_sqrt is not supported by backend FLASHINFER.$"):
        check_required_backend(None, adapter, vendor="nvidia", arch="sm_100", dtype="bfloat16")
    with pytest.raises(UsageError, match="backend FLEX_ATTENTION"):
        check_required_backend("flex_attention", adapter, **kw)
    check_required_backend("TRITON_ATTN", adapter, **kw)  # runs
    check_required_backend(None, adapter, vendor="nvidia", arch="sm_70", dtype="float16")  # vLLM picks Triton there


def test_step1_plan_refused_then_planned() -> None:
    from vmemplan.api import plan_with_request

    with pytest.raises(UsageError, match="use_alibi_sqrt is not supported by backend FLASH_ATTN"):
        plan_with_request(model=str(STEP1_CONFIG), gpu="h200", max_model_len=4096)
    _, plan = plan_with_request(model=str(STEP1_CONFIG), gpu="h200", max_model_len=4096, attention_backend="TRITON_ATTN")
    assert plan.kv_cache.num_blocks > 0
