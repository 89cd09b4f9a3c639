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
from vmemplan.models.hybrid import StateTensor, kda_state, kda_state_dtypes
from vmemplan.models.hybrid_qwen import Qwen3Next
from vmemplan.models.mixer_blocks import kda_mixer_tensors

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
        span = self.rank_span(ctx)
        h, n, start = span.hidden, span.layers, span.start
        vec = self.vector
        n_kda = self.stage_kinds(span)["mamba"]
        if n_kda:
            out += kda_mixer_tensors("linear_attn", tp=span.tp, hidden=h, num_heads=self._need("linear_num_key_heads"),
                                     head_dim=self._need("linear_key_head_dim"),
                                     conv_kernel=self._need("linear_conv_kernel_dim"), count=n_kda)
        if n:
            e = int(self._get("num_experts"))
            later = n - (1 if start == 0 else 0)
            out += [
                WeightTensor("mlp.gate.e_score_correction_bias", "router", e, 1, n, dtype="float32"),
                WeightTensor("mlp_res_proj", "router", 1, h, n, False),
                vec("mlp_res_norm_weight", h, n),
            ]
            if later:
                out += [WeightTensor("attn_res_proj", "router", 1, h, later, False),
                        vec("attn_res_norm_weight", h, later)]
        if span.last:
            out += [WeightTensor("model.attnres_final.res_proj", "router", 1, h, 1, False),
                    vec("model.attnres_final.res_norm_weight", h, 1)]
            if cfg.tie_word_embeddings and not any(t.name == "lm_head" for t in out):
                out.append(WeightTensor("lm_head", "lm_head", span.vocab_rows, h))
        return out
