"""``--attention-backend NAME`` with ``--block-size``: vLLM 0.33.0's refusal of a block size the
chosen backend's kernels cannot page.

vllm/platforms/cuda.py::CudaPlatform.get_attn_backend_cls validates a selected backend alone
(AttentionBackend.validate_configuration, vllm/v1/attention/backend.py) and raises
``Selected backend … is not valid for this configuration. Reason: [...]``; the block-size reason
comes from AttentionBackend.supports_block_size: the user's block size must be a multiple of a
size in get_supported_kernel_block_sizes.  For the dense backends below that is 16:
FLASH_ATTN ``[MultipleOf(16)]`` (flash_attn.py, outside the FA4 fp8-KV / head-256 cases),
TRITON_ATTN ``block_size % 16 == 0`` (triton_attn.py), FLEX_ATTENTION ``[MultipleOf(16)]``
(flex_attention.py), FLASHINFER ``[16, 32, 64]`` (and larger multiples of 16 on Blackwell,
flashinfer.py).  vLLM checks only a block size the user gave
(vllm/v1/attention/selector.py: ``cache_config.user_specified_block_size``).

Only the block-size check is made here; the backend's other memory (workspaces, cache layout)
stays a not-modelled warning.
"""

from __future__ import annotations

from vmemplan.core.errors import UsageError

__all__ = ["KERNEL_BLOCK_MULTIPLE", "check_backend_block_size", "check_required_backend", "default_backend_name"]

#: backend -> the block size every supported kernel size is a multiple of (0.33.0)
KERNEL_BLOCK_MULTIPLE = {"FLASH_ATTN": 16, "TRITON_ATTN": 16, "FLEX_ATTENTION": 16, "FLASHINFER": 16}


def check_backend_block_size(backend: str | None, block_size: int | None, *, mla: bool, sm_major: int | None,
                             kv_cache_dtype: str) -> None:
    """Raise vLLM's ValueError (exit 2) when ``--block-size`` is not one ``--attention-backend``
    takes.  MLA models, FA4 (SM 10) and FlashAttention with an fp8 cache (fixed FA4 page
    sizes on SM 9) are left unchecked."""
    if backend is None or block_size is None or mla:
        return
    name = backend.upper()
    multiple = KERNEL_BLOCK_MULTIPLE.get(name)
    if multiple is None:
        return
    if name == "FLASH_ATTN" and ((sm_major or 0) >= 10 or kv_cache_dtype.startswith("fp8")):
        return
    if block_size % multiple == 0:
        return
    up = -(-block_size // multiple) * multiple
    raise UsageError(
        f"Selected backend AttentionBackendEnum.{name} is not valid for this configuration. "
        "Reason: ['block_size not supported']",
        hint=f"--block-size {up} ({name} pages the KV cache in multiples of {multiple}), or drop --block-size")


def default_backend_name(*, vendor: str, arch: str, dtype: str) -> str:
    """The dense (non-MLA) attention backend vLLM 0.33.0 picks without ``--attention-backend``:
    the first valid one of vllm/platforms/cuda.py::_get_backend_priorities (SM 10: FLASHINFER,
    FLASH_ATTN, TRITON_ATTN, ...; otherwise FLASH_ATTN, FLASHINFER, TRITON_ATTN, ...), where
    FLASH_ATTN needs SM 8.0+ and FlashInfer SM 7.5+, both a 16-bit dtype; on ROCm ROCM_ATTN
    (vllm/platforms/rocm.py::_get_backend_priorities).  Head-size and fp8-cache limits that move
    the choice between FLASH_ATTN and FLASHINFER are not modelled (neither is TRITON_ATTN)."""
    if vendor == "amd":
        return "ROCM_ATTN"
    cc = int(arch[3:]) if arch.startswith("sm_") and arch[3:].isdigit() else 90
    if dtype not in ("bfloat16", "float16"):
        return "TRITON_ATTN"
    if cc // 10 == 10:
        return "FLASHINFER"
    if cc >= 80:
        return "FLASH_ATTN"
    return "FLASHINFER" if cc >= 75 else "TRITON_ATTN"


def check_required_backend(backend: str | None, adapter: object, *, vendor: str, arch: str, dtype: str) -> None:
    """Raise vLLM's refusal (exit 2) when the model's layers need one attention backend
    (``adapter.required_attention_backend()`` gives its name and vLLM's message with ``{got}``
    for the backend in use) and ``--attention-backend`` does not select it, neither does vLLM's
    default (:func:`default_backend_name`)."""
    need = getattr(adapter, "required_attention_backend", None)
    required = need() if callable(need) else None
    if required is None:
        return
    name, message = required
    got = backend.upper() if backend else default_backend_name(vendor=vendor, arch=arch, dtype=dtype)
    if got == name:
        return
    raise UsageError(message.format(got=got),
                     hint=f"--attention-backend {name} (vLLM does not select it for this model by itself)")
