"""Kimi-Linear: Kimi delta attention (KDA) layers with MLA full-attention layers and MoE.

Mirrors vllm/models/kimi_k3/nvidia/model.py (KimiLinearForCausalLM, the decoder layer that
picks KimiLinearGatedDeltaNetAttention when the config has no full-rank gate),
vllm/model_executor/layers/mamba/gdn/kimi_gdn_linear_attn.py and
vllm/models/kimi_k3/nvidia/mla.py (the q_lora_rank = None branch), 0.33.0.

``linear_attn_config.kda_layers`` / ``full_attn_layers`` are 1-based layer numbers.
"""

from __future__ import annotations

from vmemplan.core.errors import ModelConfigError, UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.dense import pad_vocab
from vmemplan.models.hybrid import (
    HybridAdapter,
    LayerKind,
    StateTensor,
    experts_per_rank,
    kda_state,
    kda_state_dtypes,
)

__all__ = ["KimiLinear"]

#: length keys vLLM reads, in order (vllm/config/model.py::_get_and_verify_max_len)
_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                "model_max_length", "max_sequence_length", "max_seq_length", "seq_len")


@register
class KimiLinear(HybridAdapter):
    architectures = ("KimiLinearForCausalLM",)
    uses_mla = True
    attention_layer_name = "model.layers.{i}.self_attn.mla_attn"
    mamba_layer_name = "model.layers.{i}.self_attn"
    family = "moe"  # type: ignore[assignment]

    def _get(self, key: str, default=None):
        v = self.config.text.get(key, default)
        return default if v is None else v

    def _kda(self) -> dict:
        k = self.config.text.get("linear_attn_config")
        if not isinstance(k, dict):
            raise ModelConfigError("config.json lacks 'linear_attn_config' (Kimi-Linear)")
        for key in ("num_heads", "head_dim", "short_conv_kernel_size", "kda_layers"):
            if key not in k:
                raise ModelConfigError(f"linear_attn_config lacks {key!r}")
        return k

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        kda = {int(x) for x in self._kda()["kda_layers"]}
        return tuple("mamba" if (i + 1) in kda else "mla" for i in range(self.config.num_hidden_layers))

    @property
    def mla_head_size(self) -> int:
        """``kv_lora_rank + qk_rope_head_dim`` (one latent per token, MultiHeadLatentAttention)."""
        return int(self._get("kv_lora_rank")) + int(self._get("qk_rope_head_dim"))

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """KDA state per rank (KimiLinearGatedDeltaNetAttention.get_state_shape /
        get_state_dtype → kda_state_shape / kda_state_dtype, 0.33.0)."""
        k = self._kda()
        conv, rec = kda_state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ctx.mamba_ssm_cache_dtype)
        return kda_state(tp=ctx.tensor_parallel_size, num_heads=int(k["num_heads"]), head_dim=int(k["head_dim"]),
                         conv_kernel=int(k["short_conv_kernel_size"]), num_spec=ctx.num_speculative_tokens,
                         conv_dtype=conv, rec_dtype=rec)

    def validate_parallel(self, ctx: GraphContext) -> None:
        tp = ctx.tensor_parallel_size
        heads = self.config.num_attention_heads
        if heads % tp:
            raise UsageError(f"--tensor-parallel-size {tp} does not divide the {heads} attention heads")
        self.mamba_state(ctx)

    def derived_max_model_len(self) -> int:
        for key in _LENGTH_KEYS:
            v = self.config.text.get(key)
            if isinstance(v, int) and v > 0:
                return v
        return self.config.max_position_embeddings

    def is_moe_layer(self, i: int) -> bool:
        e = self._get("num_experts")
        return bool(e) and i >= self._get("first_k_dense_replace", 0) and i % (self._get("moe_layer_freq", 1) or 1) == 0

    @property
    def intermediate_size(self) -> int:
        return int(self._get("moe_intermediate_size")) * int(self._get("num_experts_per_token", 1))

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        tp = ctx.tensor_parallel_size
        h = cfg.hidden_size
        kinds = self.layer_kinds()
        start, end = self.layer_range(ctx)
        rng = range(start, end)
        first = ctx.pipeline_rank == 0
        last = ctx.pipeline_rank == ctx.pipeline_parallel_size - 1
        lin, vec = self.linear, self.vector
        vocab_rows = pad_vocab(cfg.vocab_size) // tp
        out: list[WeightTensor] = []
        if first:
            out.append(WeightTensor("model.embed_tokens", "embedding", vocab_rows, h))
        n_kda = sum(1 for i in rng if kinds[i] == "mamba")
        n_mla = len(rng) - n_kda
        if n_kda:
            k = self._kda()
            nh, hd, kernel = int(k["num_heads"]), int(k["head_dim"]), int(k["short_conv_kernel_size"])
            p = nh * hd
            out += [
                # [q, k, v (P each), beta (heads), f_a (head_dim, replicated)]
                lin("self_attn.in_proj_qkvgfab", 3 * p // tp + nh // tp + hd, h, n_kda, in_full=h),
                lin("self_attn.f_b_proj", p // tp, hd, n_kda, in_full=hd),
                vec("self_attn.dt_bias", p // tp, n_kda, kind="bias", dtype="float32"),
                lin("self_attn.conv1d", 3 * p // tp, kernel, n_kda, quantizable=False, dtype="float32"),
                vec("self_attn.A_log", nh // tp, n_kda, kind="bias", dtype="float32"),
                lin("self_attn.g_a_proj", hd, h, n_kda, in_full=h),
                lin("self_attn.g_b_proj", p // tp, hd, n_kda, in_full=hd),
                vec("self_attn.o_norm", hd, n_kda),
                lin("self_attn.o_proj", h, p // tp, n_kda, in_full=p),
            ]
        if n_mla:
            nh = cfg.num_attention_heads
            nope, rope, v = int(self._get("qk_nope_head_dim")), int(self._get("qk_rope_head_dim")), int(self._get("v_head_dim"))
            lora = int(self._get("kv_lora_rank"))
            if self._get("q_lora_rank"):
                raise ModelConfigError("Kimi-Linear with q_lora_rank is not modelled (no released config has one)")
            out += [
                lin("self_attn.q_proj", nh * (nope + rope) // tp, h, n_mla, in_full=h),
                lin("self_attn.kv_a_proj_with_mqa", lora + rope, h, n_mla, in_full=h),
                vec("self_attn.kv_a_layernorm", lora, n_mla),
                lin("self_attn.kv_b_proj", nh * (nope + v) // tp, lora, n_mla, in_full=lora),
                lin("self_attn.o_proj", h, nh * v // tp, n_mla, in_full=nh * v),
            ]
            from vmemplan.models.mla_copies import mla_decode_copies

            out += mla_decode_copies(n_mla, heads_local=nh // tp, kv_lora_rank=lora, qk_nope_head_dim=nope,
                                     v_head_dim=v)
        n_moe = sum(1 for i in rng if self.is_moe_layer(i))
        if n_moe:
            e = int(self._get("num_experts"))
            inter = int(self._get("moe_intermediate_size"))
            local, div = experts_per_rank(e, ctx)
            out += [
                WeightTensor("block_sparse_moe.gate", "router", e, h, n_moe),
                WeightTensor("block_sparse_moe.gate.e_score_correction_bias", "router", e, 1, n_moe, dtype="float32"),
                WeightTensor("block_sparse_moe.experts.w13", "expert", 2 * inter // div, h, local * n_moe, True,
                             in_features_full=h, allocations=n_moe),
                WeightTensor("block_sparse_moe.experts.w2", "expert", h, inter // div, local * n_moe, True,
                             in_features_full=inter, allocations=n_moe),
            ]
            shared = inter * int(self._get("num_shared_experts", 0) or 0)
            if shared:
                out += [
                    lin("block_sparse_moe.shared_experts.gate_up_proj", 2 * shared // tp, h, n_moe, in_full=h),
                    lin("block_sparse_moe.shared_experts.down_proj", h, shared // tp, n_moe, in_full=shared),
                ]
        n_dense = len(rng) - n_moe
        if n_dense:
            inter = cfg.intermediate_size
            out += [
                lin("mlp.gate_up_proj", 2 * inter // tp, h, n_dense, in_full=h),
                lin("mlp.down_proj", h, inter // tp, n_dense, in_full=inter),
            ]
        if len(rng):
            out.append(vec("input_layernorm+post_attention_layernorm", h, 2 * len(rng)))
        if last:
            out.append(vec("model.norm", h, 1))
            if not (cfg.tie_word_embeddings and first):
                out.append(WeightTensor("lm_head", "lm_head", vocab_rows, h))
        return out

    def notes(self) -> tuple[str, ...]:
        return ()
