"""Attention-free state-space language models: Mamba-1 (``MambaForCausalLM``, also
``FalconMambaForCausalLM``) and Mamba-2 (``Mamba2ForCausalLM``).

Mirrors vllm/model_executor/models/mamba.py (MambaDecoderLayer, MambaModel,
MambaForCausalLM) with vllm/model_executor/layers/mamba/mamba_mixer.py::MambaMixer, and
vllm/model_executor/models/mamba2.py (Mamba2DecoderLayer, Mamba2Model, Mamba2ForCausalLM)
with vllm/model_executor/layers/mamba/mamba_mixer2.py::MambaMixer2 (0.33.0).  Every layer
is one mixer and one RMSNorm (``backbone.layers.{i}.mixer`` / ``.norm``); the models are
``IsAttentionFree``, so vLLM 0.33.0 leaves prefix caching off by default and the recurrent
cache runs in "none" mode with one page of ``max_model_len`` tokens per request.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.hybrid import HybridAdapter, LayerKind, StateTensor, mamba1_state, state_dtypes
from vmemplan.models.mixer_blocks import (
    Mamba2CheckpointPage,
    embedding_tensors,
    head_tensors,
    mamba1_mixer_tensors,
    mamba2_layer_state,
    mamba2_mixer_tensors,
    need_int,
    positive_int,
)

__all__ = ["Mamba1", "Mamba2"]

#: the context a model without a length key admits (vLLM: float("inf")); any user length passes
_UNBOUNDED_LEN = 1 << 40


class _AttentionFreeSSM(HybridAdapter):
    """What Mamba-1 and Mamba-2 language models share: one mixer per layer, an embedding
    (``backbone.embeddings``), a final ``norm_f`` and an LM head (tied when the config says)."""

    mamba_layer_name = "backbone.layers.{i}.mixer"
    #: no attention layers: vLLM's tp-divides-heads check reads 0 heads (vmemplan/resolve.py)
    attention_free = True
    #: transformers' default for ``tie_word_embeddings`` when the config omits it
    tie_default = True

    def _need(self, key: str) -> int:
        return need_int(self.config.text, key, " (needed for the Mamba layers)")

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        return ("mamba",) * self.config.num_hidden_layers

    def prefix_caching_supported(self) -> bool:
        """Attention-free models: vLLM 0.33.0 does not turn prefix caching on by default
        (vllm/config/model.py::ModelConfig.is_prefix_caching_supported), so the cache mode is
        "none" unless ``--enable-prefix-caching`` asks for it."""
        return False

    def validate_parallel(self, ctx: GraphContext) -> None:
        # no attention heads to divide; the mixer's own shapes are checked by mamba_state
        self.mamba_state(ctx)

    def _length_key(self) -> int | None:
        for key in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length"):
            v = self.config.text.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
        return None

    def derived_max_model_len(self) -> int:
        """MambaConfig / Mamba2Config carry no length key: vLLM then accepts any
        ``--max-model-len`` (vllm/config/model.py::_get_and_verify_max_len, 0.33.0: a derived
        length of infinity returns the user's value)."""
        return self._length_key() or _UNBOUNDED_LEN

    def default_max_model_len(self) -> int:
        """Without ``--max-model-len`` and without a length key vLLM assumes 2048 tokens."""
        return self._length_key() or 2048

    def mixer_tensors(self, ctx: GraphContext, count: int) -> list[WeightTensor]:  # pragma: no cover
        raise NotImplementedError

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        span = self.rank_span(ctx)
        out = embedding_tensors(span, "backbone.embeddings")
        if span.layers:
            out += self.mixer_tensors(ctx, span.layers)
            out.append(self.vector("backbone.layers.norm", span.hidden, span.layers))
        tied = bool(self.config.text.get("tie_word_embeddings", self.tie_default))
        return out + head_tensors(span, norm="backbone.norm_f", tied=tied)


@register
class Mamba1(_AttentionFreeSSM):
    """Mamba-1 / Falcon-Mamba: the MambaMixer is built without a quant config.  Falcon-Mamba
    (``model_type`` "falcon_mamba": mamba.py::MambaDecoderLayer ``use_rms_norm=is_falcon_mamba``,
    ``rms_norm_has_weight=not is_falcon_mamba``) adds weightless dt/B/C RMSNorms
    (mamba_mixer.py::MambaMixer ``dt_layernorm [time_step_rank]``, ``b_layernorm`` /
    ``c_layernorm [state_size]``); a weightless RMSNorm still keeps ``torch.ones(size)`` in the
    model dtype as a plain tensor on the device (layers/layernorm.py::RMSNorm.__init__)."""

    architectures = ("MambaForCausalLM",)

    def _inner(self) -> int:
        return positive_int(self.config.text, "intermediate_size") or int(self._get("expand", 2)) * self.config.hidden_size

    def _dt_rank(self) -> int:
        # MambaConfig: "auto" = ceil(hidden / 16)
        return positive_int(self.config.text, "time_step_rank") or -(-self.config.hidden_size // 16)

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """Mamba-1 state (MambaForCausalLM.get_mamba_state_shape_from_config →
        MambaStateShapeCalculator.mamba1_state_shape, 0.33.0)."""
        conv, ssm = state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ctx.mamba_ssm_cache_dtype)
        return mamba1_state(tp=ctx.tensor_parallel_size, intermediate_size=self._inner(),
                            state_size=self._need("state_size"), conv_kernel=self._need("conv_kernel"),
                            conv_dtype=conv, ssm_dtype=ssm)

    def mixer_tensors(self, ctx: GraphContext, count: int) -> list[WeightTensor]:
        return mamba1_mixer_tensors(
            tp=ctx.tensor_parallel_size, hidden_size=self.config.hidden_size, intermediate_size=self._inner(),
            state_size=self._need("state_size"), dt_rank=self._dt_rank(), conv_kernel=self._need("conv_kernel"),
            count=count, conv_bias=bool(self._get("use_conv_bias", True)), proj_bias=bool(self._get("use_bias", False)),
        ) + self._falcon_norm_tensors(count)

    def _falcon_norm_tensors(self, count: int) -> list[WeightTensor]:
        if self.config.model_type != "falcon_mamba":
            return []
        state = self._need("state_size")
        return [self.vector("backbone.layers.mixer.dt_layernorm.weight(ones, not a parameter)", self._dt_rank(), count),
                self.vector("backbone.layers.mixer.b_layernorm+c_layernorm.weight(ones, not a parameter)", state,
                            2 * count)]


@register
class Mamba2(Mamba2CheckpointPage, _AttentionFreeSSM):
    """Mamba-2: MambaMixer2 (gated RMSNorm with a weight) built with the model's quant config;
    the mixer's width is the config's ``intermediate_size`` when it has one, else ``expand x
    hidden`` (the state always uses ``expand x hidden``: Mamba2ForCausalLM.
    get_mamba_state_shape_from_config)."""

    architectures = ("Mamba2ForCausalLM",)
    tie_default = False  # Mamba2Config

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        return mamba2_layer_state(
            ctx, intermediate_size=int(self._get("expand", 2)) * self.config.hidden_size,
            n_groups=int(self._get("n_groups", 1)), num_heads=self._need("num_heads"), head_dim=self._need("head_dim"),
            state_size=self._need("state_size"), conv_kernel=self._need("conv_kernel"),
        )

    def mixer_tensors(self, ctx: GraphContext, count: int) -> list[WeightTensor]:
        inner = positive_int(self.config.text, "intermediate_size") or int(self._get("expand", 2)) * self.config.hidden_size
        return mamba2_mixer_tensors(
            tp=ctx.tensor_parallel_size, hidden_size=self.config.hidden_size, intermediate_size=inner,
            n_groups=int(self._get("n_groups", 1)), num_heads=self._need("num_heads"),
            state_size=self._need("state_size"), conv_kernel=self._need("conv_kernel"),
            use_conv_bias=bool(self._get("use_conv_bias", True)), use_bias=bool(self._get("use_bias", False)),
            count=count,
        )
