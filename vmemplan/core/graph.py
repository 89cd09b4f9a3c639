"""What a model adapter and the laws exchange: one rank's deployment and its tensors.

:class:`GraphContext` is the deployment as one rank sees it; :class:`WeightTensor` one
parameter tensor (or persistent buffer) that rank holds.  Adapters (``vmemplan.models``)
produce them, laws (``vmemplan.laws``) price them; both import them from here.
"""

from __future__ import annotations

from typing import Any, Literal

from vmemplan.core.frozen import frozen

__all__ = ["GraphContext", "WeightKind", "WeightTensor", "attention_scales"]

WeightKind = Literal[
    "embedding", "lm_head", "linear", "norm", "bias", "buffer", "expert", "router", "encoder"
]


@frozen
class WeightTensor:
    """One parameter tensor (or persistent buffer) as a rank holds it.

    ``rows`` x ``cols`` is the per-rank shape (vLLM stores linear weights as
    ``[out_features, in_features]``); ``count`` repeats it (one per layer, or per local
    expert).  ``quantizable`` says whether the checkpoint's quantization scheme applies to
    it; embeddings, norms and buffers stay at their own width.  ``dtype`` overrides the
    model dtype (e.g. an fp32 buffer).
    """

    name: str
    kind: WeightKind
    rows: int
    cols: int
    count: int = 1
    quantizable: bool = False
    dtype: str | None = None
    # full (unsharded) input features, for group-wise quantization scales
    in_features_full: int | None = None
    # how many separate tensors the ``count`` repetitions are stored in: None means one
    # tensor per repetition (a per-layer linear); a fused-MoE weight holds all local
    # experts of a layer in one tensor, so it sets this to the number of layers.
    allocations: int | None = None
    # full (unsharded) output features, for per-channel / block scales
    out_features_full: int | None = None
    # a copy the model derives from the tensor named here, in the model dtype, that exists only
    # when that tensor is quantized (MLA's W_UK_T/W_UV dequantized from a quantized kv_b_proj;
    # from an unquantized one they are views, no bytes): the weights law decides
    copy_of: str | None = None

    @property
    def num_allocations(self) -> int:
        return self.allocations if self.allocations is not None else self.count

    @property
    def elements(self) -> int:
        return self.rows * self.cols * self.count


@frozen
class GraphContext:
    """What an adapter needs to know about the deployment, for one rank."""

    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    pipeline_rank: int = 0
    block_size: int = 16
    cache_dtype: str = "auto"  # as the user gave --kv-cache-dtype
    model_dtype: str = "bfloat16"
    sm_major: int | None = 9
    num_speculative_tokens: int = 0
    speculative_method: str | None = None
    enable_expert_parallel: bool = False
    data_parallel_size: int = 1
    decode_context_parallel_size: int = 1
    max_model_len: int = 2048
    enable_prefix_caching: bool = True
    max_num_batched_tokens: int = 8192
    max_num_seqs: int = 256
    quantization: str | None = None  # --quantization (online), else read from the config
    enable_eplb: bool = False
    num_redundant_experts: int = 0
    prefill_context_parallel_size: int = 1
    mamba_cache_mode: str | None = None  # "none" | "align" | "all"; None = vLLM's default
    mamba_cache_dtype: str = "auto"  # --mamba-cache-dtype (conv state; "auto" = model dtype)
    mamba_ssm_cache_dtype: str = "auto"  # --mamba-ssm-cache-dtype ("auto" = the model's default)
    limit_mm_per_prompt: tuple[tuple[str, int], ...] = ()
    skip_mm_profiling: bool = False
    mm_encoder_tp_mode: str = "weights"
    speculative_model_config: Any = None  # drafter's ModelConfig for draft-model speculation
    #: the vLLM release planned for, as a release tuple (``(0, 33, 0)``); None = the newest
    #: law (laws that changed between releases read it, see ``at_least``)
    vllm_version: tuple[int, ...] | None = None
    disable_sliding_window: bool = False  # --disable-sliding-window (config windows off)
    #: vLLM's rotary-embedding custom op runs: compilation mode NONE (--enforce-eager, -O0) turns
    #: every custom op on (vllm/model_executor/custom_op.py::CustomOp.default_on, 0.33.0)
    rotary_custom_op: bool = False

    def at_least(self, *release: int) -> bool:
        """Whether the planned release is ``release`` or newer (True when unknown: newest)."""
        return self.vllm_version is None or tuple(self.vllm_version) >= tuple(release)

    @property
    def world_size(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size

    @property
    def expert_parallel_size(self) -> int:
        """EP width as vLLM forms it: tp × dp ranks when expert parallelism is on, else 1."""
        return self.tensor_parallel_size * self.data_parallel_size if self.enable_expert_parallel else 1


def attention_scales(prefix: str, count: int, *, dtype: str | None = "float32") -> WeightTensor:
    """The four scalars ``_k_scale``/``_v_scale``/``_q_scale``/``_prob_scale`` that every
    ``Attention`` layer registers (vllm/model_executor/layers/attention/attention.py::
    set_default_quant_scales, 0.33.0), for ``count`` such layers named ``{prefix}``.

    They are fp32 buffers; under ``Fp8Config`` ``BaseKVCacheMethod.create_weights`` makes them
    parameters in the model dtype instead (pass ``dtype=None``).
    """
    return WeightTensor(f"{prefix}.k/v/q/prob_scale", "buffer", 1, 1, 4 * count, dtype=dtype)
