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

For mixture-of-experts models the forward's peak is inside the fused-MoE call instead; its
workspaces are priced from the shapes vLLM allocates (:func:`moe_forward_bytes`).

The constants (buffer counts, the number of fp32 copies of the logits alive at the sampler's peak,
the fused-MoE workspace layout and chunk size of each release)
come from ``registry/cost_model.yaml`` through :class:`ActivationConstants`; COST_MODEL.md records
how each was obtained.  Everything here is pure integer arithmetic.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from vmemplan.core.frozen import frozen

__all__ = [
    "ActivationConstants",
    "ActivationEstimate",
    "MoeShape",
    "moe_forward_bytes",
    "moe_shape_from_config",
    "activation_peak_bytes",
    "forward_activation_bytes",
    "sampler_peak_bytes",
]

_FP32_BYTES = 4


@frozen(kw_only=True)
class ActivationConstants:
    """The activation constants of one vLLM release era, resolved from the registry.

    ``dense_hidden_buffers`` / ``dense_intermediate_buffers``: tensors of ``hidden`` and of
    ``intermediate / tp`` elements per token alive at the forward's peak (dense models).
    ``moe_workspace_layout`` / ``moe_chunk_tokens``: how the release's fused-MoE call lays out its
    workspaces and how many tokens it processes per chunk (0: no chunking); see
    :func:`moe_forward_bytes`.
    ``floor_bytes``: the smallest forward estimate.
    ``sampler_fp32_copies``: fp32 arrays of ``rows × vocab`` alive at the sampler's peak, on top of
    the logits in the model dtype.
    """

    era: str
    vllm_version: str  # the vLLM release the constants were calibrated against
    dense_hidden_buffers: float
    dense_intermediate_buffers: float
    moe_workspace_layout: Literal["fused_experts_impl", "modular"] = "modular"
    moe_chunk_tokens: int = 0
    floor_bytes: int
    sampler_path: str
    sampler_fp32_copies: float


@frozen(kw_only=True)
class ActivationEstimate:
    """The estimated profile-run peak, split into its two phases."""

    forward_bytes: int
    extra_model_bytes: int
    sampler_bytes: int
    peak_bytes: int
    buffers: str
    source: str


@frozen(kw_only=True)
class MoeShape:
    """The shapes of one rank's MoE layers that size the fused-MoE call's buffers.

    ``expert_intermediate`` / ``shared_intermediate`` / ``dense_intermediate`` are per rank
    (already divided by the ways vLLM splits them); ``num_experts`` is the router's width (the
    global expert count: the gate is replicated).  ``dense_intermediate`` is 0 when every layer
    is a MoE layer.
    """

    hidden_size: int
    num_experts: int
    top_k: int
    expert_intermediate: int
    shared_intermediate: int = 0
    dense_intermediate: int = 0


def _first_int(cfg: Any, *keys: str) -> int | None:
    for k in keys:
        v = cfg.get(k) if hasattr(cfg, "get") else None
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, (int, float)) and v == int(v) and v > 0:
            return int(v)
    return None


def _whole(text_config: Any, key: str) -> int:
    v = text_config.get(key) if hasattr(text_config, "get") else None
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def has_dense_layers(text_config: Any) -> bool:
    """Whether some decoder layers of a MoE model are dense (first-k dense, interleaved, sparse
    step, layer frequency or period, or an explicit ``mlp_only_layers`` list)."""
    return (_whole(text_config, "first_k_dense_replace") > 0 or _whole(text_config, "interleave_moe_layer_step") > 1
            or _whole(text_config, "decoder_sparse_step") > 1 or _whole(text_config, "moe_layer_freq") > 1
            or _whole(text_config, "expert_layer_period") > 1 or bool(text_config.get("mlp_only_layers")))


def moe_shape_from_config(text_config: Any, *, moe_tp_size: int, hidden_size: int,
                          dense_layers: bool = False) -> MoeShape | None:
    """A :class:`MoeShape` from a model's text config, or ``None`` when it names no experts.

    Reads the key spellings of the MoE configs vLLM supports (``num_experts`` /
    ``num_local_experts`` / ``n_routed_experts``; ``num_experts_per_tok`` / ``top_k_experts`` /
    ``experts_per_token``; ``moe_intermediate_size`` / ``expert_intermediate_size``, else
    ``intermediate_size``; shared experts from ``shared_expert_intermediate_size``,
    ``moe_shared_expert_intermediate_size``, ``shared_intermediate_size`` or
    ``n_shared_experts × moe_intermediate_size``).  Expert and shared widths are divided by
    ``moe_tp_size`` (vllm/model_executor/layers/fused_moe/layer.py::FusedMoE, 0.33.0: the
    intermediate dimension is split over the flattened tp × dp group unless experts are placed
    whole); ``dense_layers`` adds the dense MLP of the model's non-MoE layers.
    """
    cfg = text_config
    experts = _first_int(cfg, "num_experts", "num_local_experts", "n_routed_experts")
    if experts is None:
        return None
    top_k = _first_int(cfg, "num_experts_per_tok", "num_experts_per_token", "top_k_experts",
                       "experts_per_token", "top_k") or 1
    inter = _first_int(cfg, "moe_intermediate_size", "expert_intermediate_size", "intermediate_size")
    if inter is None:
        return None
    shared = _first_int(cfg, "shared_expert_intermediate_size", "moe_shared_expert_intermediate_size",
                        "shared_intermediate_size")
    if shared is None:
        n_shared = _first_int(cfg, "n_shared_experts", "num_shared_experts")
        shared = (n_shared or 0) * inter
    tp = max(1, moe_tp_size)
    dense = _first_int(cfg, "intermediate_size") if dense_layers else None
    return MoeShape(
        hidden_size=hidden_size, num_experts=experts, top_k=top_k,
        expert_intermediate=max(1, inter // tp), shared_intermediate=shared // tp,
        dense_intermediate=(dense // tp) if dense else 0,
    )


def moe_forward_bytes(
    shape: MoeShape, *, tokens: int, dtype_bytes: int, constants: ActivationConstants
) -> tuple[int, str]:
    """Bytes alive at the peak of one MoE layer during the profile run, and a description.

    With ``T`` tokens, hidden ``K``, ``I`` the expert intermediate per rank, ``N = 2I`` (the fused
    w13 output) and ``M = min(T, chunk)`` (``chunk`` = the release's
    ``VLLM_FUSED_MOE_CHUNK_SIZE``; 0 = no chunking), the routed experts hold, in elements of the
    activation dtype:

    * layout ``fused_experts_impl`` (0.10 – 0.16 unquantized path,
      vllm/model_executor/layers/fused_moe/fused_moe.py::fused_experts_impl): ``cache13`` of
      ``M·topk·max(N, K)`` (cache1 and cache3 share it) and ``cache2`` of ``M·topk·I``; the
      output is written in place;
    * layout ``modular`` (0.17+, vllm/model_executor/layers/fused_moe/modular_kernel.py::
      FusedMoEModularKernel._allocate_buffers with ``TritonExperts.workspace_shapes`` /
      ``MarlinExperts.workspace_shapes``): ``workspace13`` of ``M·topk·max(I, K)``, which also
      holds the ``T·K`` output when there is one chunk (else the output is apart), and
      ``workspace2`` of ``M·topk·max(N, K)``;

    plus the router logits ``T × E`` (model dtype), ``topk_weights`` (fp32), ``topk_ids`` and
    ``token_expert_indices`` (int32): 12 bytes per token and choice
    (vllm/model_executor/layers/fused_moe/router/, fused_topk).  Beside the MoE call the layer
    keeps ``h_buf`` hidden-wide rows per token (residual, input, output), as the dense law does.
    Shared experts (and the dense MLP of non-MoE layers) run before the routed experts and free
    their intermediates, so the forward's peak is the largest of the three phases (0.33.0 runs
    shared experts on an aux stream beside the routed ones only for batches of at most
    ``VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD`` = 256 tokens,
    fused_moe/runner/shared_experts.py::SharedExperts._determine_shared_experts_order; the profile
    run's batch is larger)::

        forward = T·h_buf·K·d + max(routed, T·3·I_shared·d, T·3·I_dense·d)
    """
    t = tokens
    k, i, e, topk = shape.hidden_size, shape.expert_intermediate, shape.num_experts, shape.top_k
    n = 2 * i
    chunk = constants.moe_chunk_tokens
    m = min(t, chunk) if chunk > 0 else t
    if constants.moe_workspace_layout == "fused_experts_impl":
        ws_elems = m * topk * max(n, k) + m * topk * i
        layout = f"fused_experts_impl: M*topk*(max(2I,K)+I), M={m}"
    else:
        ws13 = m * topk * max(i, k)
        out = t * k
        common = max(ws13, out) if m == t else ws13 + out
        ws_elems = common + m * topk * max(n, k)
        layout = f"modular: max(M*topk*max(I,K), T*K) + M*topk*max(2I,K), M={m}"
    routed = ws_elems * dtype_bytes + t * e * dtype_bytes + t * topk * 12
    shared = t * 3 * shape.shared_intermediate * dtype_bytes
    dense = t * 3 * shape.dense_intermediate * dtype_bytes
    held = math.ceil(t * constants.dense_hidden_buffers * k * dtype_bytes)
    desc = (f"fused MoE {layout}; K={k}, I={i}/rank, E={e}, topk={topk}"
            + (f", chunk {chunk}" if chunk else ", unchunked")
            + (f"; shared I={shape.shared_intermediate}" if shape.shared_intermediate else "")
            + (f"; dense I={shape.dense_intermediate}" if shape.dense_intermediate else "")
            + f"; + {constants.dense_hidden_buffers:g} x hidden per token, {t} tokens")
    return held + max(routed, shared, dense), desc


def forward_activation_bytes(
    *,
    family: Literal["dense", "moe"],
    hidden_size: int,
    intermediate_size: int,
    tensor_parallel_size: int,
    max_num_batched_tokens: int,
    constants: ActivationConstants,
    moe: MoeShape | None = None,
) -> tuple[int, str]:
    """Bytes alive at the forward pass's peak, and a one-line description of the buffers.

    Dense (and a ``moe`` family whose config names no experts, ``moe=None``)::

        forward = ceil(mnbt × 2 × (h_buf × hidden + i_buf × intermediate / tp))

    MoE: :func:`moe_forward_bytes` (the fused-MoE call's workspaces, from vLLM's code).

    Both are floored at ``constants.floor_bytes``.  Activations are 2 bytes whatever the weight
    format: quantized GEMMs return the input's 16-bit width.  Mirrors the token count of
    vllm/v1/worker/gpu_model_runner.py::GPUModelRunner.profile_run (0.33.0), which runs
    ``_dummy_run(max_num_batched_tokens, is_profile=True)``.
    """
    tokens = max_num_batched_tokens
    tp = max(1, tensor_parallel_size)
    if family == "dense" or moe is None:  # a MoE config that names no experts: the dense law is all there is
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
        raw, desc = moe_forward_bytes(moe, tokens=tokens, dtype_bytes=2, constants=constants)
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
    moe: MoeShape | None = None,
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
    ``num_attention_heads`` and ``head_dim`` are taken for the record: neither phase's law reads
    them (the forward's high-water mark is inside the widest MLP; see the module docstring).
    """
    if max_num_batched_tokens < 1 or max_num_seqs < 1:
        raise ValueError("max_num_batched_tokens and max_num_seqs must be >= 1")
    if tensor_parallel_size < 1:
        raise ValueError("tensor_parallel_size must be >= 1")
    forward, desc = forward_activation_bytes(
        family=family, hidden_size=hidden_size, intermediate_size=intermediate_size,
        tensor_parallel_size=tensor_parallel_size, max_num_batched_tokens=max_num_batched_tokens,
        constants=constants, moe=moe)
    sampler = sampler_peak_bytes(
        hidden_size=hidden_size, vocab_size=vocab_size, max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs, dtype_bytes=dtype_bytes, constants=constants)
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
