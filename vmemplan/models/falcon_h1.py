"""TII Falcon-H1 (``FalconH1ForCausalLM``): every decoder layer runs grouped-query attention
and a Mamba-2 mixer in parallel on the same input, then a gated MLP.

Mirrors vllm/model_executor/models/falcon_h1.py (FalconH1ParallelHybrid,
FalconH1AttentionDecoderLayer, FalconH1SSMDecoderLayer, FalconH1MLP, FalconH1Model,
FalconH1ForCausalLM) with vllm/model_executor/layers/mamba/mamba_mixer2.py::MambaMixer2
(0.33.0).  Each layer owns two caches: the attention layer ``model.layers.{i}.attn`` and the
Mamba-2 layer, which vLLM names ``model.{L + i}.mixer`` (``L`` = the layer count: the SSM
prefix is built from the layer prefix's first part and ``num_hidden_layers + i``).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.hybrid import (
    LayerKind,
    StateTensor,
    extra_groups_for_head_shards,
)
from vmemplan.models.mixer_blocks import (
    Mamba2Hybrid,
    embedding_tensors,
    gqa_attention_tensors,
    head_tensors,
    mamba2_layer_state,
    mamba2_mixer_tensors,
    mlp_tensors,
    need_int,
    positive_int,
    stated_head_dim,
)

__all__ = ["FalconH1"]


@register
class FalconH1(Mamba2Hybrid):
    """Falcon-H1: attention + Mamba-2 in every layer (``layers_block_type`` is "hybrid"
    throughout, transformers FalconH1Config)."""

    architectures = ("FalconH1ForCausalLM",)
    attention_layer_name = "model.layers.{i}.attn"

    def _need(self, key: str) -> int:
        return need_int(self.config.text, key, " (needed for Falcon-H1's Mamba-2 layers)")

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        return ("attention+mamba",) * self.config.num_hidden_layers

    @property
    def attention_head_size(self) -> int:
        return stated_head_dim(self.config)

    def d_ssm(self) -> int:
        """``mamba_d_ssm``, else ``mamba_expand * hidden_size`` (FalconH1SSMDecoderLayer)."""
        return positive_int(self.config.text, "mamba_d_ssm") or int(self._get("mamba_expand", 2)) * self.config.hidden_size

    def _head_dim_ssm(self) -> int:
        # transformers' "auto": d_ssm / heads
        return positive_int(self.config.text, "mamba_d_head") or self.d_ssm() // self._need("mamba_n_heads")

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """Mamba-2 state (FalconH1ForCausalLM.get_mamba_state_shape_from_config /
        get_mamba_state_dtype_from_config, 0.33.0)."""
        return mamba2_layer_state(
            ctx, intermediate_size=self.d_ssm(), n_groups=int(self._get("mamba_n_groups", 1)),
            num_heads=self._need("mamba_n_heads"), head_dim=self._head_dim_ssm(),
            state_size=self._need("mamba_d_state"), conv_kernel=self._need("mamba_d_conv"),
        )

    def validate_parallel(self, ctx: GraphContext) -> None:
        # transformers' FalconH1Config.validate_architecture (@strict), which vLLM runs on the config
        d, heads, head_dim = self.d_ssm(), self._need("mamba_n_heads"), self.config.text.get("mamba_d_head")
        if d % heads:
            raise ModelConfigError("config.json: mamba_n_heads must divide mamba_expand * hidden_size "
                                   f"({heads} heads, {d} channels): transformers' FalconH1Config refuses it, and so vLLM",
                                   hint="the Hub config sets mamba_d_ssm (e.g. 1536 for Falcon-H1-0.5B); a trimmed "
                                        "copy without it cannot be loaded")
        if isinstance(head_dim, int) and head_dim * heads != d:
            raise ModelConfigError(f"config.json: mamba_d_head {head_dim} x mamba_n_heads {heads} != {d}: the Mamba "
                                   "head dimensions do not match (transformers' FalconH1Config refuses it)",
                                   hint="fix mamba_d_head / mamba_d_ssm in config.json")
        super().validate_parallel(ctx)

    def kv_cache_specs_for(self, ctx: GraphContext, **kwargs: Any) -> dict[str, Any]:
        """The shared specs, with each Mamba-2 layer under vLLM's name ``model.{L + i}.mixer``."""
        specs = super().kv_cache_specs_for(ctx, **kwargs)
        n = self.config.num_hidden_layers
        out: dict[str, Any] = {}
        for name, spec in specs.items():
            if name.endswith(".mixer"):
                i = int(name.split(".")[2])
                name = f"model.{n + i}.mixer"
            out[name] = spec
        return out

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        span = self.rank_span(ctx)
        tp, h, n = span.tp, span.hidden, span.layers
        hd = self.attention_head_size
        out = embedding_tensors(span)
        if n:
            out += gqa_attention_tensors("self_attn", tp=tp, hidden=h, heads=cfg.num_attention_heads,
                                         kv_heads_local=self.attention_kv_heads(tp), head_dim=hd, count=n)
            out += self._mamba_tensors(tp, n)
            out += mlp_tensors("feed_forward", tp=tp, hidden=h, inter=cfg.intermediate_size, count=n)
            out.append(self.vector("input_layernorm+pre_ff_layernorm", h, 2 * n))
            # one shared rotary cos/sin cache (get_rope's cache), max_position_embeddings x rotary_dim
            rotary_dim = int(self._get("attn_rotary_emb", hd))
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", int(self._get("max_position_embeddings", 8192)),
                                    rotary_dim))
        return out + head_tensors(span, norm="model.final_layernorm", tied=cfg.tie_word_embeddings)

    def _mamba_tensors(self, tp: int, n: int) -> list[WeightTensor]:
        """Each layer's MambaMixer2 (``mamba.mamba``) and its muP vector."""
        d_ssm, heads = self.d_ssm(), self._need("mamba_n_heads")
        n_groups, d_state = int(self._get("mamba_n_groups", 1)), self._need("mamba_d_state")
        mixer = mamba2_mixer_tensors(
            tp=tp, hidden_size=self.config.hidden_size, intermediate_size=d_ssm, n_groups=n_groups, num_heads=heads,
            state_size=d_state, conv_kernel=self._need("mamba_d_conv"),
            use_conv_bias=bool(self._get("mamba_conv_bias", True)),
            use_bias=bool(self._get("mamba_proj_bias", False)), count=n, prefix="mamba.mamba",
        )
        if not self._get("mamba_rms_norm", False):
            # Mixer2RMSNormGated registers no weight when use_rms_norm is False
            mixer = [t for t in mixer if t.name != "mamba.mamba.norm"]
        # the per-block muP scaling vector of in_proj's output (FalconH1SSMDecoderLayer._init_mup_vector),
        # a buffer in the model dtype over the rank's in_proj rows (groups padded for tp)
        groups = n_groups + extra_groups_for_head_shards(n_groups, tp)
        return mixer + [WeightTensor("mamba.mup_vector", "buffer", 1, (2 * d_ssm + 2 * groups * d_state + heads) // tp, n)]
