"""The activation peak that vLLM's profile run measures, estimated from the model's shapes.

vLLM does not compute this figure: it runs one dummy step at the worst-case shape and reads the
PyTorch allocator's high-water mark (``torch_peak_increase``).  vmemplan cannot run the step, so it
rebuilds the two phases of the profile run from the tensors each one keeps alive:

1. the forward pass over ``max_num_batched_tokens`` tokens
   (``GPUModelRunner._dummy_run(self.max_num_tokens, is_profile=True)``), whose high-water mark is
   inside the widest MLP: the residual stream, the layer input, the MLP output (``hidden`` wide) and
   the fused gate/up projection plus its activated half (``intermediate / tp`` wide) are alive at once;
2. the dummy sampler over ``min(max_num_seqs, max_num_batched_tokens)`` rows of logits
   (``GPUModelRunner._dummy_sampler_run``), which runs *after* the forward's intermediates are freed
   but while the forward's output hidden states are still referenced by ``profile_run``.

The constants (buffer counts, the number of fp32 copies of the logits alive at the sampler's peak)
come from ``registry/cost_model.yaml`` through :class:`ActivationConstants`; COST_MODEL.md records
how each was obtained.  Everything here is pure integer arithmetic.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ActivationConstants",
    "ActivationEstimate",
    "activation_peak_bytes",
    "forward_activation_bytes",
    "sampler_peak_bytes",
]

_FP32_BYTES = 4


class ActivationConstants(BaseModel):
    """The activation constants of one vLLM release era, resolved from the registry.

    ``dense_hidden_buffers`` / ``dense_intermediate_buffers``: tensors of ``hidden`` and of
    ``intermediate / tp`` elements per token alive at the forward's peak (dense models).
    ``moe_buffers_by_tp``: NVIDIA aiconfigurator's buffer counts for MoE models, applied to the
    attention width ``num_attention_heads × head_dim`` (keys: tensor-parallel size, clamped to 8).
    ``floor_bytes``: the smallest forward estimate.
    ``sampler_fp32_copies``: fp32 arrays of ``rows × vocab`` alive at the sampler's peak, on top of
    the logits in the model dtype.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    era: str
    vllm_version: str = Field(description="the vLLM release the constants were calibrated against")
    dense_hidden_buffers: float = Field(ge=0)
    dense_intermediate_buffers: float = Field(ge=0)
    moe_buffers_by_tp: dict[int, float]
    floor_bytes: int = Field(ge=0)
    sampler_path: str
    sampler_fp32_copies: float = Field(ge=0)


class ActivationEstimate(BaseModel):
    """The estimated profile-run peak, split into its two phases."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    forward_bytes: int
    extra_model_bytes: int
    sampler_bytes: int
    peak_bytes: int
    buffers: str
    source: str


def _moe_buffers(constants: ActivationConstants, tensor_parallel_size: int) -> float:
    """aiconfigurator's table lookup: tp clamped to 8, else the largest listed tp not above it."""
    tp = min(tensor_parallel_size, 8)
    keys = sorted(k for k in constants.moe_buffers_by_tp if k <= tp)
    if not keys:
        keys = sorted(constants.moe_buffers_by_tp)
    return constants.moe_buffers_by_tp[keys[-1]]


def forward_activation_bytes(
    *,
    family: Literal["dense", "moe"],
    hidden_size: int,
    num_attention_heads: int,
    head_dim: int,
    intermediate_size: int,
    tensor_parallel_size: int,
    max_num_batched_tokens: int,
    constants: ActivationConstants,
) -> tuple[int, str]:
    """Bytes alive at the forward pass's peak, and a one-line description of the buffers.

    Dense::

        forward = ceil(mnbt × 2 × (h_buf × hidden + i_buf × intermediate / tp))

    MoE (aiconfigurator's prior, uncalibrated against vLLM logs)::

        forward = ceil(C_moe[min(tp, 8)] × mnbt × (num_attention_heads × head_dim) × 2)

    Both are floored at ``constants.floor_bytes``.  Activations are 2 bytes whatever the weight
    format: quantized GEMMs return the input's 16-bit width.  Mirrors the token count of
    vllm/v1/worker/gpu_model_runner.py::GPUModelRunner.profile_run (0.33.0), which runs
    ``_dummy_run(max_num_batched_tokens, is_profile=True)``.
    """
    tokens = max_num_batched_tokens
    tp = max(1, tensor_parallel_size)
    if family == "dense":
        per_token_elems = (
            constants.dense_hidden_buffers * hidden_size
            + constants.dense_intermediate_buffers * intermediate_size / tp
        )
        raw = math.ceil(tokens * 2 * per_token_elems)
        desc = (
            f"{constants.dense_hidden_buffers:g} x hidden({hidden_size}) + "
            f"{constants.dense_intermediate_buffers:g} x intermediate({intermediate_size})/tp({tp}) "
            f"per token, 2 B, {tokens} tokens"
        )
    else:
        buffers = _moe_buffers(constants, tp)
        width = num_attention_heads * head_dim
        raw = math.ceil(buffers * tokens * width * 2)
        desc = (
            f"{buffers:g} buffers (aiconfigurator MoE, tp {min(tp, 8)}) x heads*head_dim({width}) "
            f"x 2 B x {tokens} tokens"
        )
    return max(raw, constants.floor_bytes), desc


def sampler_peak_bytes(
    *,
    hidden_size: int,
    vocab_size: int,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    dtype_bytes: int,
    constants: ActivationConstants,
) -> int:
    """Bytes alive at the dummy sampler's peak.

    ::

        rows    = min(max_num_seqs, mnbt)
        sampler = rows × vocab × (dtype_bytes + 4 × fp32_copies)      # logits + fp32 work arrays
                + mnbt × hidden × dtype_bytes                          # forward output, still held

    ``profile_run`` keeps ``hidden_states`` (all ``mnbt`` rows) referenced while
    ``_dummy_sampler_run`` computes ``[rows, vocab]`` logits in the model dtype; ``Sampler.forward``
    converts them to fp32 and the top-k/top-p path adds its own fp32 arrays (see COST_MODEL.md for
    the count per release and sampler implementation).  Mirrors
    vllm/v1/worker/gpu_model_runner.py::GPUModelRunner._dummy_sampler_run and
    vllm/v1/sample/sampler.py::Sampler.forward (0.33.0).
    """
    rows = min(max_num_seqs, max_num_batched_tokens)
    per_logit = dtype_bytes + _FP32_BYTES * constants.sampler_fp32_copies
    logits = math.ceil(rows * vocab_size * per_logit)
    held_hidden = max_num_batched_tokens * hidden_size * dtype_bytes
    return logits + held_hidden


def activation_peak_bytes(
    *,
    family: Literal["dense", "moe"],
    hidden_size: int,
    num_attention_heads: int,
    head_dim: int,
    intermediate_size: int,
    vocab_size: int,
    tensor_parallel_size: int,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    dtype_bytes: int,
    constants: ActivationConstants,
    extra_model_buffers_bytes: int = 0,
) -> ActivationEstimate:
    """The profile run's torch peak increase: the larger of the forward and the sampler phase.

    ::

        peak = max(forward + extra_model_buffers, sampler)

    The two phases do not overlap: the forward's intermediates are released when ``_dummy_run``
    returns, and only its output rows (counted in the sampler term) stay alive while the sampler
    runs (vllm/v1/worker/gpu_model_runner.py::GPUModelRunner.profile_run, 0.33.0).  In 0.33.0 the
    sampler runs twice in a row (the second with a seeded generator); the two runs are sequential,
    so the peak is that of one run.  ``extra_model_buffers_bytes`` is for model code that allocates
    its own buffers at the token budget (the generic buffer count does not know them).
    """
    if max_num_batched_tokens < 1 or max_num_seqs < 1:
        raise ValueError("max_num_batched_tokens and max_num_seqs must be >= 1")
    if tensor_parallel_size < 1:
        raise ValueError("tensor_parallel_size must be >= 1")
    forward, desc = forward_activation_bytes(
        family=family,
        hidden_size=hidden_size,
        num_attention_heads=num_attention_heads,
        head_dim=head_dim,
        intermediate_size=intermediate_size,
        tensor_parallel_size=tensor_parallel_size,
        max_num_batched_tokens=max_num_batched_tokens,
        constants=constants,
    )
    sampler = sampler_peak_bytes(
        hidden_size=hidden_size,
        vocab_size=vocab_size,
        max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs,
        dtype_bytes=dtype_bytes,
        constants=constants,
    )
    extra = max(0, int(extra_model_buffers_bytes))
    peak = max(forward + extra, sampler)
    source = (
        f"cost model era {constants.era} (calibrated against vLLM {constants.vllm_version}); "
        f"sampler path {constants.sampler_path} ({constants.sampler_fp32_copies:g} fp32 copies)"
    )
    return ActivationEstimate(
        forward_bytes=forward,
        extra_model_bytes=extra,
        sampler_bytes=sampler,
        peak_bytes=peak,
        buffers=desc,
        source=source,
    )
