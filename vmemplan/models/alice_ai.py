"""AliceAI (Yandex AliceAI-Foundation): Qwen3-Next's gated full attention and MoE with Kimi
delta attention (KDA) in place of the gated-delta layers, and block attention residuals.

Mirrors vllm/model_executor/models/alice_ai.py (0.33.0):

* ``linear_attention`` layers: ``KimiGatedDeltaNetAttention``
  (vllm/model_executor/layers/mamba/gdn/kimi_gdn_linear_attn.py) on a Kimi view of the flat
  config (``_make_kimi_kda_config``: ``linear_num_key_heads`` heads of ``linear_key_head_dim``,
  kernel ``linear_conv_kernel_dim``, no full-rank gate): ``in_proj_qkvgfab``, ``f_b_proj``,
  an fp32 ``dt_bias``, an fp32 ``conv1d``, an fp32 ``A_log``, ``g_a_proj`` (replicated),
  ``g_b_proj``, ``o_norm``, ``o_proj`` (the tensors :class:`vmemplan.models.hybrid_kimi.KimiLinear`
  plans), with the KDA recurrent state (``AliceAIForCausalLM.get_mamba_state_shape_from_config``
  → ``kda_state_shape``, ``kda_state_dtype``);
* ``full_attention`` layers: ``Qwen3NextAttention`` with ``attn_output_gate`` forced on and no
  qkv bias (``_make_alice_ai_full_attention_config``);
* ``AliceAISparseMoeBlock`` on every layer: Qwen3-Next's router, ``shared_expert_gate``,
  routed experts and shared expert, plus an fp32 ``e_score_correction_bias [E]``;
* per layer, GemmaRMSNorm input / post-attention norms and the attention-residual mixers: a
  replicated ``attn_res_proj [1, H]`` with ``attn_res_norm_weight [H]`` (layers after the
  first) and ``mlp_res_proj [1, H]`` with ``mlp_res_norm_weight [H]`` (every layer);
* ``AliceAIModel``: ``embed_tokens``, ``norm``, ``attnres_final`` (``res_proj [1, H]``,
  ``res_norm_weight [H]``); ``AliceAIForCausalLM``: an ``lm_head`` of its own (never tied).
  Pipeline parallelism is refused (AliceAIForCausalLMConfig.verify_and_update_config).
"""

from __future__ import annotations

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.dense import pad_vocab
from vmemplan.models.hybrid import StateTensor, kda_state, kda_state_dtypes
from vmemplan.models.hybrid_qwen import Qwen3Next

__all__ = ["AliceAI"]

_GDN_TENSORS = ("linear_attn.in_proj_qkvz", "linear_attn.in_proj_ba", "linear_attn.conv1d",
                "linear_attn.dt_bias", "linear_attn.A_log", "linear_attn.norm", "linear_attn.out_proj")


@register
class AliceAI(Qwen3Next):
    """AliceAIForCausalLM (vllm/model_executor/models/alice_ai.py, 0.33.0); see the module."""

    architectures = ("AliceAIForCausalLM",)

    def is_moe_layer(self, index: int) -> bool:
        return True  # AliceAIDecoderBlock always builds AliceAISparseMoeBlock

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """KDA state per rank (AliceAIForCausalLM.get_mamba_state_shape_from_config /
        get_mamba_state_dtype_from_config → kda_state_shape / kda_state_dtype, 0.33.0)."""
        conv, rec = kda_state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ctx.mamba_ssm_cache_dtype)
        return kda_state(tp=ctx.tensor_parallel_size, num_heads=self._need("linear_num_key_heads"),
                         head_dim=self._need("linear_key_head_dim"),
                         conv_kernel=self._need("linear_conv_kernel_dim"),
                         num_spec=ctx.num_speculative_tokens, conv_dtype=conv, rec_dtype=rec)

    def prefill_checkpoint_alignment(self, ctx: GraphContext, mode: str) -> int | None:
        return None  # the KDA layers run the Triton kernel; no FlashInfer GDN checkpoint

    def validate_parallel(self, ctx: GraphContext) -> None:
        if ctx.pipeline_parallel_size != 1:
            raise UsageError("AliceAI does not support pipeline parallelism",
                             hint="AliceAIForCausalLMConfig.verify_and_update_config requires "
                                  "--pipeline-parallel-size 1")
        text = self.config.text
        if self._need("linear_num_key_heads") != self._need("linear_num_value_heads") or \
                self._need("linear_key_head_dim") != self._need("linear_value_head_dim"):
            raise UsageError("AliceAI KDA requires matching key/value head counts and dimensions",
                             hint="alice_ai.py::_make_kimi_kda_config refuses the config")
        experts = text.get("num_experts") or 0
        if ctx.tensor_parallel_size > experts:
            raise UsageError(f"--tensor-parallel-size {ctx.tensor_parallel_size} is greater than the "
                             f"{experts} experts", hint="AliceAISparseMoeBlock refuses it")
        super().validate_parallel(ctx)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = [t for t in super().weight_tensors(ctx) if t.name not in _GDN_TENSORS]
        cfg = self.config
        h = cfg.hidden_size
        tp = ctx.tensor_parallel_size
        lin, vec = self.linear, self.vector
        kinds = self.layer_kinds()
        start, end = self.layer_range(ctx)
        n = end - start
        n_kda = sum(1 for i in range(start, end) if kinds[i] == "mamba")
        if n_kda:
            nh, hd = self._need("linear_num_key_heads"), self._need("linear_key_head_dim")
            kernel = self._need("linear_conv_kernel_dim")
            p = nh * hd
            out += [
                # [q, k, v (P each), beta (heads), f_a (head_dim, replicated)]
                lin("linear_attn.in_proj_qkvgfab", 3 * p // tp + nh // tp + hd, h, n_kda, in_full=h),
                lin("linear_attn.f_b_proj", p // tp, hd, n_kda, in_full=hd),
                vec("linear_attn.dt_bias", p // tp, n_kda, kind="bias", dtype="float32"),
                lin("linear_attn.conv1d", 3 * p // tp, kernel, n_kda, quantizable=False, dtype="float32"),
                vec("linear_attn.A_log", nh // tp, n_kda, kind="bias", dtype="float32"),
                lin("linear_attn.g_a_proj", hd, h, n_kda, in_full=h),
                lin("linear_attn.g_b_proj", p // tp, hd, n_kda, in_full=hd),
                vec("linear_attn.o_norm", hd, n_kda),
                lin("linear_attn.o_proj", h, p // tp, n_kda, in_full=p),
            ]
        if n:
            e = int(self._t("num_experts"))
            later = n - (1 if start == 0 else 0)
            out += [
                WeightTensor("mlp.gate.e_score_correction_bias", "router", e, 1, n, dtype="float32"),
                WeightTensor("mlp_res_proj", "router", 1, h, n, False),
                vec("mlp_res_norm_weight", h, n),
            ]
            if later:
                out += [WeightTensor("attn_res_proj", "router", 1, h, later, False),
                        vec("attn_res_norm_weight", h, later)]
        if ctx.pipeline_rank == ctx.pipeline_parallel_size - 1:
            out += [WeightTensor("model.attnres_final.res_proj", "router", 1, h, 1, False),
                    vec("model.attnres_final.res_norm_weight", h, 1)]
            if cfg.tie_word_embeddings and not any(t.name == "lm_head" for t in out):
                out.append(WeightTensor("lm_head", "lm_head", pad_vocab(cfg.vocab_size) // tp, h))
        return out
