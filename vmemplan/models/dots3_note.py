"""dots3-note (``Dots3NoteForCausalLM``): a hybrid DSA / sliding-window MLA MoE decoder with a MoE
vision transformer and an audio encoder in front.

vLLM 0.33.0, vllm/models/dots3_note/nvidia/ (model.py, attention.py, multimodal.py):

* the language model (``Dots3NoteLanguageModelForCausalLM`` over DeepseekV32Model) builds each layer
  ``Dots3NoteDecoderLayer`` with ``layer_types[i]``: ``sliding_attention`` ->
  ``Dots3NoteSlidingAttention``, a dense MLA over the ``swa_*`` geometry (``swa_num_attention_heads``,
  ``swa_q_lora_rank``, ``swa_kv_lora_rank``, ``swa_qk_nope_head_dim``, ``swa_qk_rope_head_dim``,
  ``swa_v_head_dim``) with ``sliding_window_size`` on Dots3NoteTritonMLABackend; otherwise
  ``Dots3NoteFullAttention``, DeepSeek-V3.2's sparse MLA (with its indexer) over the main geometry whose
  cache rows are padded to the sliding layers' latent width (``Dots3NotePaddedMLAAttention``:
  ``physical_head_size = swa_kv_lora_rank + swa_qk_rope_head_dim``; Dots3NotePaddedSparseBackend, block
  layout BLHNC).  Both add a ``g_proj`` gate (headwise: ReplicatedLinear ``hidden -> heads``; else
  ColumnParallelLinear ``hidden -> heads × v_head_dim``) and ``k_rope_only_layernorm``; each
  geometry has its own plain-RoPE cos/sin cache (``rope_theta`` / ``swa_rope_theta``, model dtype);
* the MLPs are DeepSeek's (dense below ``first_k_dense_replace``, else ``Dots3NoteMoE``: routed experts
  and a shared expert) with the dense / shared intermediate size padded to ``block × TP`` under a
  block-quantized checkpoint (``_padded_mlp_size``);
* the DSA buffers: the shared top-k buffer ``[max_num_batched_tokens, index_topk]`` int32 and, per
  full layer, the sparse MLA layer's own index group (``SparseMLAIndexGroupBuilder`` over the whole
  top-k buffer: ``[T + 1, index_topk]`` and ``[T + 1]`` int32) and the FlashAttn sparse impl's
  ``cu_seqlens_q_buffer [T + 1]`` int32;
* under ``_mark_tower_model(vllm_config, {"image", "audio", "video"})``: ``visual`` when the image or
  video limit is above 0 and ``audio_tower`` when the audio or video limit is (both read from
  config.json's ``vision_config`` / ``audio_config``): :mod:`vmemplan.models.dots3_note_towers`.

Encoder profile (common/processor.py::Dots3NoteProcessingInfo.get_mm_max_tokens_per_item): an image
``max_pixels / (patch × merge)²`` tokens (``max_pixels`` from the config when it carries one, else the
Qwen2-VL processor default 28²·1280, since config.json does not), audio ``min(L, ceil(chunk_seconds ×
sampling_rate / (160 × 8 × merge_factor)))``, video ``L - L / 4``.  The MTP drafter is not modelled.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.core.kv_specs import MLAAttentionSpec, SlidingWindowMLASpec
from vmemplan.core.units import dtype_bytes
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.deepseek import DeepseekV32
from vmemplan.models.dots3_note_towers import dots3_note_audio_tensors, dots_moe_vit_tensors
from vmemplan.models.mla_copies import mla_decode_copies
from vmemplan.models.moe_blocks import stage_embedding, stage_head
from vmemplan.models.multimodal import VisionEncoderMixin

__all__ = ["Dots3Note"]

HOP_LENGTH = 160  # common/processor.py::_HOP_LENGTH
DEFAULT_MAX_PIXELS = 28 * 28 * 1280  # transformers Qwen2VLImageProcessor (no preprocessor_config here)


class _Geometry(NamedTuple):
    heads: int
    q_lora: int
    kv_lora: int
    nope: int
    rope: int
    v: int
    gate: str
    theta: float


@register
class Dots3Note(VisionEncoderMixin, DeepseekV32):
    """dots3-note: see the module docstring."""

    architectures = ("Dots3NoteForCausalLM",)
    modalities = ("image", "video", "audio")

    # -- config -----------------------------------------------------------------------
    def sliding(self, layer: int) -> bool:
        types = self.config.text.get("layer_types") or []
        return layer < len(types) and types[layer] == "sliding_attention"

    def geometry(self, sliding: bool) -> _Geometry:
        t = self.config.text
        p = "swa_" if sliding else ""
        return _Geometry(int(t[f"{p}num_attention_heads"]), int(t[f"{p}q_lora_rank"]), int(t[f"{p}kv_lora_rank"]),
                         int(t[f"{p}qk_nope_head_dim"]), int(t[f"{p}qk_rope_head_dim"]), int(t[f"{p}v_head_dim"]),
                         str(t.get(f"{p}attention_gate_type", "headwise")), float(t[f"{p}rope_theta"]))

    @property
    def physical_head_size(self) -> int:
        g = self.geometry(True)
        return g.kv_lora + g.rope

    def validate_parallel(self, ctx: GraphContext) -> None:
        tp = ctx.tensor_parallel_size
        for sliding in (False, True):
            heads = self.geometry(sliding).heads
            if heads % tp:
                raise UsageError(f"--tensor-parallel-size {tp} does not divide the {heads} attention heads",
                                 hint=f"use a divisor of {heads}")

    def num_mtp_layers(self, ctx: GraphContext) -> int:
        return 0  # the Dots3NoteMTP drafter is not modelled

    def _padded(self, inter: int, ctx: GraphContext) -> int:
        """model.py::_padded_mlp_size: ``inter`` in whole blocks split evenly over TP under a
        block-quantized checkpoint."""
        block = (self.config.quantization_config or {}).get("weight_block_size")
        if not block:
            return inter
        tp = ctx.tensor_parallel_size
        blocks = -(-inter // int(block[0]))
        return -(-blocks // tp) * int(block[0]) * tp

    # -- weights --------------------------------------------------------------------------
    def _attention(self, tag: str, g: _Geometry, n: int, ctx: GraphContext) -> list[WeightTensor]:
        """One geometry's MLA projections, gate and norms for ``n`` layers on a rank."""
        tp, h = ctx.tensor_parallel_size, self.config.hidden_size
        local = g.heads // tp
        kv_b = f"self_attn.kv_b_proj[{tag}]"
        gate = (WeightTensor(f"self_attn.g_proj[{tag}]", "linear", g.heads, h, n, True, in_features_full=h)
                if g.gate == "headwise" else
                WeightTensor(f"self_attn.g_proj[{tag}]", "linear", local * g.v, h, n, True, in_features_full=h))
        out = [
            WeightTensor(f"self_attn.fused_qkv_a_proj[{tag}]", "linear", g.q_lora + g.kv_lora + g.rope, h, n, True,
                         in_features_full=h),
            WeightTensor(f"self_attn.q_a_layernorm+kv_a_layernorm[{tag}]", "norm", g.q_lora + g.kv_lora, 1, n),
            WeightTensor(f"self_attn.q_b_proj[{tag}]", "linear", local * (g.nope + g.rope), g.q_lora, n, True,
                         in_features_full=g.q_lora),
            WeightTensor(kv_b, "linear", local * (g.nope + g.v), g.kv_lora, n, True, in_features_full=g.kv_lora),
            WeightTensor(f"self_attn.o_proj[{tag}]", "linear", h, local * g.v, n, True, in_features_full=g.heads * g.v),
            gate,
            WeightTensor(f"self_attn.k_rope_only_layernorm[{tag}]", "norm", g.rope, 1, n),
        ]
        return out + mla_decode_copies(n, heads_local=local, kv_lora_rank=g.kv_lora, qk_nope_head_dim=g.nope,
                                       v_head_dim=g.v, source=kv_b)

    def mlp_widths(self, ctx: GraphContext) -> tuple[int, tuple[int, int]]:
        """The dense MLP and the (one, fused) shared expert in whole quantization blocks over TP."""
        shared, width = self.shared_experts()
        return (self._padded(self.config.intermediate_size, ctx),
                (1, self._padded(shared * width, ctx)) if shared else (0, width))

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        span = self.rank_span(ctx)
        out = stage_embedding(span)
        layers = range(span.start, span.end)
        if span.layers:
            h = span.hidden
            full = [i for i in layers if not self.sliding(i)]
            geoms: list[_Geometry] = []
            for tag, sliding in (("swa", True), ("full", False)):
                n = sum(1 for i in layers if self.sliding(i) == sliding)
                if n:
                    geoms.append(self.geometry(sliding))
                    out += self._attention(tag, geoms[-1], n, ctx)
            if full:
                out += self.extra_layer_tensors(len(full), ctx) + self._dsa_buffers(len(full), ctx)
            moe = sum(1 for i in layers if self.is_moe_layer(i))
            out += self.mlp_tensors(span.layers - moe, moe, ctx)
            out.append(WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * span.layers))
            for rope in {(g.theta, g.rope) for g in geoms}:
                out.append(WeightTensor(f"rotary_emb.cos_sin_cache[theta {rope[0]:g}]", "buffer",
                                        self.config.max_position_embeddings, rope[1],
                                        dtype="float32" if ctx.rotary_custom_op else None))
        return out + stage_head(span) + self.tower_tensors(self.config, ctx)

    def _dsa_buffers(self, n_full: int, ctx: GraphContext) -> list[WeightTensor]:
        """The shared top-k buffer and each full layer's index group and ``cu_seqlens_q_buffer``."""
        topk, t = int(self.config.text.get("index_topk") or 0), ctx.max_num_batched_tokens
        return [
            WeightTensor("model.topk_indices_buffer", "buffer", t, topk, dtype="int32"),
            WeightTensor("index_group.physical_topk_indices", "buffer", t + 1, topk, n_full, dtype="int32"),
            WeightTensor("index_group.valid_topk_counts+impl.cu_seqlens_q_buffer", "buffer", t + 1, 1, 2 * n_full,
                         dtype="int32"),
        ]

    # -- towers ----------------------------------------------------------------------------
    def _section(self, name: str) -> dict[str, Any] | None:
        value = self.config.raw.get(name)
        return value if isinstance(value, dict) else None

    def tower_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        """``visual`` with an image or video limit above 0, ``audio_tower`` with an audio or video one
        (multimodal.py::Dots3NoteForCausalLM.__init__)."""
        def limit(m: str) -> int:
            return mm_law.limit_for(ctx.limit_mm_per_prompt, m)

        vc, ac = self._section("vision_config"), self._section("audio_config")
        out: list[WeightTensor] = []
        if vc is not None and (limit("image") > 0 or limit("video") > 0):
            out += dots_moe_vit_tensors(vc)
        if ac is not None and (limit("audio") > 0 or limit("video") > 0):
            out += dots3_note_audio_tensors(ac)
        return out

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        seq = ctx.max_model_len
        out: dict[str, int] = {}
        vc, ac = self._section("vision_config"), self._section("audio_config")
        if vc is not None:
            factor = int(vc.get("patch_size", 14)) * int(vc.get("spatial_merge_size", 2))
            max_pixels = int(vc.get("max_pixels") or config.raw.get("max_pixels") or DEFAULT_MAX_PIXELS)
            out["image"] = max_pixels // (factor * factor)
            out["video"] = max(1, seq - seq // 4)
        if ac is not None:
            stride = HOP_LENGTH * (8 if ac.get("use_conv2d_stem", True) else 2) * int(ac.get("merge_factor", 1))
            samples = int(ac.get("chunk_seconds", 60) * ac.get("sampling_rate", 16000))
            out["audio"] = min(seq, -(-samples // stride))
        return out

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = self._section("vision_config") or {}
        return int(vc.get("embed_dim", 1536)), int(vc.get("intermediate_size", 4224))

    @property
    def patches_per_token(self) -> int:
        vc = self._section("vision_config") or {}
        return int(vc.get("spatial_merge_size", 2)) ** 2

    # -- KV cache ----------------------------------------------------------------------------
    def resolve_block_size(self, ctx: GraphContext, *, user_block_size: int | None, default: int) -> int:
        """64: FlashAttnMLASparse (the padded DSA backend) takes 64-token blocks only."""
        if user_block_size is not None and user_block_size % 64:
            raise UsageError(f"--block-size {user_block_size} is not a multiple of 64, which dots3-note's sparse "
                             "MLA backend needs", hint="use 64")
        return user_block_size or 64

    def resolve_cache_dtype(self, ctx: GraphContext, cache_dtype: str) -> str:
        if cache_dtype in ("auto", "bfloat16", ctx.model_dtype):
            return "auto"
        raise UsageError(f"dots3-note's padded sparse MLA cache is priced for a 16-bit cache only, not {cache_dtype}",
                         hint="use --kv-cache-dtype auto")

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """Per full layer the padded latent spec (``physical_head_size``) and the indexer's 132-byte
        K cache; per sliding layer a ``SlidingWindowMLASpec`` of its latent width over
        ``sliding_window_size`` (Dots3NotePaddedMLAAttention.get_kv_cache_spec, MLAAttention with
        ``sliding_window``, DeepseekV32IndexerCache)."""
        width = dtype_bytes(ctx.model_dtype)
        cache = ctx.model_dtype
        swa = self.geometry(True)
        window = int(self.config.text.get("sliding_window_size") or 0)
        full = MLAAttentionSpec(block_size=ctx.block_size, head_size=self.physical_head_size, cache_dtype=cache,
                                dtype_bytes=width)
        ring = SlidingWindowMLASpec(block_size=ctx.block_size, head_size=swa.kv_lora + swa.rope, cache_dtype=cache,
                                    dtype_bytes=width, sliding_window=window)
        index = MLAAttentionSpec(block_size=ctx.block_size, head_size=self.index_head_dim + self.index_head_dim // 128 * 4,
                                 cache_dtype="uint8", dtype_bytes=1, cache_role="indexer")
        specs: dict[str, Any] = {}
        for i in self._layer_indices(ctx):
            if self.sliding(i):
                specs[f"model.layers.{i}.self_attn.attn"] = ring
            else:
                specs[f"model.layers.{i}.self_attn.indexer.k_cache"] = index
                specs[f"model.layers.{i}.self_attn.attn"] = full
        return specs

    def kv_cache_layout(self, ctx: GraphContext) -> Any:
        """Dots3NotePaddedSparseBackend declares BLHNC only (block outermost)."""
        return "block_outermost"

    def backend(self, ctx: GraphContext, user_block_size: int | None = None) -> Any:
        return super().backend(replace(ctx, cache_dtype="auto"), user_block_size)

    def notes(self) -> tuple[str, ...]:
        return ("dots3-note: hybrid DSA / sliding-window MLA; the full layers' cache rows are padded to the "
                "sliding layers' latent width; the MTP drafter is not modelled",)
