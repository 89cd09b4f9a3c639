"""--mamba-cache-dtype, --mamba-ssm-cache-dtype and --mamba-block-size, as vLLM 0.33.0 takes them.

The two dtypes size the recurrent-state page of hybrid models: the adapters apply them
(vmemplan/models/hybrid.py::state_dtypes, kda_state_dtypes, mirroring
vllm/model_executor/layers/mamba/mamba_utils.py::MambaStateDtypeCalculator), and through the page the
platform's hybrid alignment may raise the attention block size.  This module checks the values vLLM
accepts and says where a flag changes nothing.

--mamba-block-size has no effect on the pool of any model vmemplan plans: with prefix caching on,
vLLM sets the Mamba block to the aligned attention block of a hybrid model
(vllm/platforms/interface.py::Platform._align_hybrid_block_size, ``cache_config.mamba_block_size =
cache_config.block_size`` in "align" mode), and a recurrent page in "align" mode is a fixed number
of pages whatever its block; with prefix caching off vLLM refuses any value but max_model_len
(vllm/config/vllm.py::VllmConfig.validate_mamba_block_size).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vmemplan.core.errors import UsageError

if TYPE_CHECKING:
    from vmemplan.resolve import PlanInputs

__all__ = ["MAMBA_DTYPES", "check_mamba_dtypes", "mamba_block_size_warnings", "mamba_dtype_warnings"]

#: vllm/config/cache.py::MambaDType (0.33.0)
MAMBA_DTYPES = ("auto", "float32", "float16", "bfloat16")


def check_mamba_dtypes(inputs: PlanInputs) -> None:
    """A value outside ``MambaDType`` is vLLM's validation error (CacheConfig is a pydantic
    dataclass: the Literal refuses it)."""
    for flag, value in (("--mamba-cache-dtype", inputs.mamba_cache_dtype),
                        ("--mamba-ssm-cache-dtype", inputs.mamba_ssm_cache_dtype)):
        if value is not None and value not in MAMBA_DTYPES:
            raise UsageError(f"unknown {flag} {value!r}", hint="one of " + ", ".join(MAMBA_DTYPES))


def _recurrent_layers(adapter: Any) -> int:
    count = getattr(adapter, "num_recurrent_layers", None)
    return int(count()) if callable(count) else 0


def _attention_layers(adapter: Any) -> int:
    count = getattr(adapter, "num_attention_layers", None)
    return int(count()) if callable(count) else 1


def mamba_dtype_warnings(inputs: PlanInputs, adapter: Any, config: Any) -> list[str]:
    """What vLLM says, or what the plan should say, about the two dtype flags."""
    given = [f"--{name.replace('_', '-')} {value}" for name, value in
             (("mamba_cache_dtype", inputs.mamba_cache_dtype), ("mamba_ssm_cache_dtype", inputs.mamba_ssm_cache_dtype))
             if value is not None]
    if not given:
        return []
    if not _recurrent_layers(adapter):
        return [f"{', '.join(given)}: the model has no recurrent (Mamba / linear-attention) layers, so it changes "
                "nothing, as in vLLM (only their state reads it)"]
    out = []
    ssm = inputs.mamba_ssm_cache_dtype
    own = config.text.get("mamba_ssm_dtype")
    if (ssm not in (None, "auto") and own is not None and ssm != own
            and any(a.startswith("Qwen3_5") for a in config.architectures)):
        # vllm/model_executor/models/config.py::Qwen3_5ForConditionalGenerationConfig.verify_and_update_config
        out.append(f"Qwen3.5 model specifies mamba_ssm_dtype='{own}' in its config, but --mamba-ssm-cache-dtype='{ssm}' "
                   "was passed. Using the user-specified value.")
    return out


def mamba_block_size_warnings(inputs: PlanInputs, adapter: Any, *, enable_prefix_caching: bool, max_model_len: int,
                              block_size: int, version: tuple[int, ...] | None) -> list[str]:
    """--mamba-block-size N: vLLM 0.33.0's refusal without prefix caching, else a note that the
    pool does not move (see the module docstring)."""
    n = inputs.mamba_block_size
    if n is None:
        return []
    if version is not None and version[:2] < (0, 33):
        return [f"--mamba-block-size {n}: vmemplan read the flag from vLLM 0.33.0 (no effect on the pool), not from "
                "this release; the plan ignores it"]
    if n != max_model_len and not enable_prefix_caching:
        raise UsageError("--mamba-block-size can only be set with --enable-prefix-caching",
                         hint=f"drop --mamba-block-size, or set it to max_model_len ({max_model_len}); vLLM's own "
                              "check (vllm/config/vllm.py::VllmConfig.validate_mamba_block_size)")
    if not _recurrent_layers(adapter):
        return [f"--mamba-block-size {n}: the model has no recurrent (Mamba / linear-attention) layers, so it "
                "changes nothing"]
    if enable_prefix_caching and _attention_layers(adapter) and n != block_size:
        return [f"--mamba-block-size {n}: vLLM 0.33.0 sets the Mamba block size to the attention block size "
                f"({block_size} tokens) of a hybrid model in 'align' mode (Platform._align_hybrid_block_size), so the "
                "flag changes nothing"]
    return []
