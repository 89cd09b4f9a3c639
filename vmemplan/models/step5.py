"""Step 5 (StepFun): a sigmoid-routed MoE with sliding-window layers and DeepSeek-style sparse
attention (DSA) on its full-attention layers, whose region summaries and indexer tail live in
two extra KV cache layers beside each DSA layer.

Mirrors vllm/models/step5/nvidia/ (0.33.0):

* ``model.py::Step5DecoderLayer``: the layer type (``layer_types_with_mtp`` / ``layer_types``,
  else even layers sliding) and a window (``sliding_window``) make a sliding-window layer;
  ``attention_other_setting`` gives the layers of its ``attention_type`` their own heads, KV
  groups and head size; ``swa_num_attention_heads`` the sliding layers' heads.  A
  ``sparse_config`` section is required (dense-only checkpoints are refused); with it enabled
  (config.py::get_step5_sparse_config) every ``full_attention`` layer that is not sliding runs
  DSA.
* ``model.py::Step5Attention``:

  - DSA layers: ``Step5FusedQKVIndexerLinear`` ``[qkv | index_q | index_k | index_z | gate, H]``
    (never quantized): the QKVParallelLinear rows, the rank's provider groups' indexer query
    heads (``sparse_indexer_num_heads / index_tp_size`` per group, ``_step5_group_partition``)
    x ``proxy_dim``, one replicated indexer K and Z head of ``proxy_dim``, ``heads / tp`` gate
    rows; ``Step5SparseIndexerIndexTPLinear`` ``sparse_indexer_w [heads_idx x local groups /
    index_tp_size, H]``; ``ssmax_s`` fp32 ``[heads]`` (whole, unused); the indexer's RMSNorm
    ``[proxy_dim]`` and LayerNorm (weight + bias) at the model dtype; a second rotary table
    (``Step5SparseAttention._build_sparse_rotary_emb``: head size ``proxy_dim``, rotary
    ``sparse_indexer_rope_dim``);
  - other layers: ``qkvg_proj`` (MergedColumnParallelLinear ``[q, k, v, gate]``) when the gate is
    on and TP splits the KV heads, else ``qkv_proj`` + ``g_proj [heads / tp, H]`` (gate only);
  - ``o_proj``, per-head ``q_norm`` / ``k_norm`` (Step5RMSNorm at ``norm_dtype``), ``get_rope``
    (``rope_scaling`` only on ``yarn_only_types``; per-layer ``rope_theta`` and
    ``partial_rotary_factors`` lists), and the Attention layer's four fp32 scales.
* ``Step5MLP`` (merged ``gate_up_proj``, ``down_proj``) on the dense layers (``intermediate_size``)
  and as the shared expert (``share_expert_dim``); ``Step5MoE`` on ``moe_layers_enum`` /
  ``moe_layer_list`` (else every layer but the first): fp32 GateLinear router, fp32
  ``router_bias [E]``, the routed experts.  Step5RMSNorm input / post-attention / final norms at
  ``norm_dtype``; ``embed_tokens``; an untied or tied ``lm_head``.
* The DSA attention impl's per-device ``Step5FlashInferSparse`` adapter
  (flashinfer_sparse.py, one per rank through a ``functools.cache``) allocates a 128 MiB uint8
  workspace at construction, and its FlashInfer ragged-prefill wrapper an 8 MiB uint8 int
  workspace (flashinfer/prefill.py::BatchPrefillWithRaggedKVCacheWrapper): device memory held
  with the model, counted with the weights as vLLM's load-time measurement does.
* KV caches (``Attention.get_kv_cache_spec`` with ``Step5DSAAttentionBackend.customize_spec``,
  sparse_summary_cache.py, csa_tail_ring.py): window layers a ``SlidingWindowSpec``; DSA layers a
  ``FullAttentionSpec`` whose block stride must hold whole eight-token pages
  (``MultipleOf(8)``, get_block_stride_alignment), plus ``.attn.sparse_summary_cache`` (a
  ``FullAttentionSpec`` of one 256-byte uint8 summary per eight tokens) and
  ``.attn.csa_tail_ring`` (a ``CircularBufferSpec`` of one main page, bf16, 1 KiB stride
  alignment).  The DSA backend declares only the BLNHC layout (block outermost).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import CircularBufferSpec, FullAttentionSpec, SlidingWindowSpec
from vmemplan.laws.kv_groups import LayoutChoice
from vmemplan.models.base import register
from vmemplan.models.dense import pad_vocab
from vmemplan.models.dense_blocks import kv_spec_fields
from vmemplan.models.moe import MoEDecoder, _int
from vmemplan.models.moe_blocks import gated_mlp_tensors
from vmemplan.models.step3p5 import layer_rope_params
from vmemplan.models.windowed import _rope_positions

__all__ = ["Step5"]

#: Step5FlashInferSparse's workspace and the FlashInfer wrapper's int workspace (bytes, uint8)
WORKSPACE_BYTES = 128 << 20
INT_WORKSPACE_BYTES = 8 << 20
#: csa_tail_ring.py: one bf16 ``[index_k | index_z]`` row
RING_ROW_BYTES = 2 * 256 * 2


def _groups_per_rank(groups: int, tp: int) -> int:
    """``_step5_groups_per_rank``: contiguous groups one TP rank sees."""
    if groups % tp == 0:
        return groups // tp
    if tp % groups == 0:
        return 1
    raise UsageError(f"--tensor-parallel-size {tp} and the {groups} Step5 groups do not divide one another",
                     hint="model.py::_step5_groups_per_rank refuses it")


@register
class Step5(MoEDecoder):
    """Step5ForCausalLM (vllm/models/step5/nvidia/model.py, 0.33.0); see the module."""

    architectures = ("Step5ForCausalLM",)
    router_dtype = "float32"
    router_correction_bias = True

    # -- config facts -------------------------------------------------------------------
    @property
    def _text(self) -> Mapping[str, Any]:
        return self.config.text

    def num_experts(self) -> int:
        return _int(self._text, "moe_num_experts", default=16)

    def top_k(self) -> int:
        return _int(self._text, "moe_top_k", default=4)

    def expert_intermediate(self) -> int:
        return _int(self._text, "moe_intermediate_size", default=10240)

    def shared_intermediate(self) -> int:
        s = self._text.get("share_expert_dim")
        return int(s) if s is not None else self.expert_intermediate() * self.top_k()

    def max_position(self) -> int:
        """Step5Config: ``max_position_embeddings``, else ``max_seq_len`` (4096)."""
        text = self._text
        return int(text.get("max_position_embeddings") or text.get("max_seq_len") or 4096)

    def derived_max_model_len(self) -> int:
        return self.max_position()

    def sparse(self) -> Mapping[str, Any] | None:
        """The enabled ``sparse_config`` section with Step5SparseConfig's defaults, or None when
        it says ``enabled: false`` (config.py::get_step5_sparse_config)."""
        section = self._text.get("sparse_config")
        if not isinstance(section, Mapping):
            raise UsageError("this Step5 config has no sparse_config section",
                             hint="Step5DecoderLayer refuses dense-only checkpoints")
        if section.get("enabled") is False:
            return None
        index_tp = section.get("index_tp_size") or section.get("num_provider_groups") or 4
        return {"proxy_dim": int(section.get("proxy_dim") or 256),
                "rope_dim": int(section.get("sparse_indexer_rope_dim") or 32),
                "heads": int(section.get("sparse_indexer_num_heads") or 16),
                "k_heads": int(section.get("sparse_indexer_num_k_heads") or 1),
                "index_tp": int(index_tp)}

    def _types(self) -> list[str]:
        lt = self._text.get("layer_types_with_mtp") or self._text.get("layer_types") or []
        return [str(t) for t in lt]

    def _window(self) -> int | None:
        w = self._text.get("sliding_window")
        return int(w) if w else None

    def is_sliding(self, index: int) -> bool:
        """Step5Attention: the layer's type (even layers without ``layer_types``) is
        ``sliding_attention`` and a window is configured."""
        types = self._types()
        kind = types[index] if types else ("sliding_attention" if index % 2 == 0 else "full_attention")
        return self._window() is not None and kind == "sliding_attention"

    def is_dsa(self, index: int) -> bool:
        """``_is_step5_full_attention_layer`` (a layer past ``layer_types`` is full) and not a
        window layer (``use_dsa_backend``)."""
        if self.sparse() is None or self.is_sliding(index):
            return False
        types = self._types()
        return (types[index] if index < len(types) else "full_attention") == "full_attention"

    def geometry(self, index: int) -> tuple[int, int, int]:
        """(heads, KV heads, head size) of layer ``index`` (Step5DecoderLayer)."""
        text, cfg = self._text, self.config
        heads, kv, hd = cfg.num_attention_heads, _int(text, "num_attention_groups"), cfg.head_dim
        other = text.get("attention_other_setting")
        types = self._types()
        if isinstance(other, Mapping) and index < len(types) and types[index] == other.get("attention_type"):
            heads = int(other.get("num_attention_heads") or heads)
            kv = int(other.get("num_attention_groups") or kv)
            hd = int(other.get("head_dim") or hd)
        swa = text.get("swa_num_attention_heads")
        if swa and self.is_sliding(index):
            heads = int(swa)
        return heads, kv, hd

    def is_moe_layer(self, index: int) -> bool:
        text = self._text
        enum, listed = text.get("moe_layers_enum"), text.get("moe_layer_list")
        raw = enum.split(",") if isinstance(enum, str) else enum if enum is not None else listed
        if raw is None:
            return 0 < index < self.config.num_hidden_layers
        return index in {int(i) for i in raw if str(i).strip()}

    def _norm_dtype(self) -> str | None:
        nd = str(self._text.get("norm_dtype", "bf16")).lower()
        return "float32" if nd in ("fp32", "float32", "float") else None if nd in ("bf16", "bfloat16") else nd

    def rope_params(self, index: int, *, indexer: bool = False) -> dict[str, Any]:
        """``get_rope``'s parameters for the layer's main rotary table, or with ``indexer`` the
        sparse indexer's (its base keeps ``rope_scaling`` whatever ``yarn_only_types`` says)."""
        text = self._text
        types = self._types()
        kind = types[index] if types else ("sliding_attention" if index % 2 == 0 else "full_attention")
        params = layer_rope_params(text, index, kind, default_theta=500000, yarn_only_applies=not indexer)
        if indexer:
            sp = self.sparse() or {}
            if str(params["rope_type"]).strip().lower() == "none":
                params["rope_type"] = "default"
            params["partial_rotary_factor"] = sp["rope_dim"] / sp["proxy_dim"]
        return params

    def validate_parallel(self, ctx: GraphContext) -> None:
        tp = ctx.tensor_parallel_size
        sp = self.sparse()
        for i in range(self.config.num_hidden_layers):
            heads, kv, hd = self.geometry(i)
            if heads % tp:
                raise UsageError(f"--tensor-parallel-size {tp} does not divide a layer's {heads} attention heads",
                                 hint="Step5Attention refuses it")
            if (kv >= tp and kv % tp) or (kv < tp and tp % kv):
                raise UsageError(f"--tensor-parallel-size {tp} and the {kv} KV heads do not divide one another",
                                 hint="Step5Attention splits or replicates whole KV heads")
            if sp is not None and self.is_dsa(i):
                if sp["index_tp"] != kv:
                    raise UsageError(f"the sparse indexer's {sp['index_tp']} provider groups differ from the "
                                     f"{kv} KV groups", hint="_validate_step5_dsa_parallel_geometry refuses it")
                local_kv = _groups_per_rank(kv, tp)
                if (heads // tp) // local_kv not in (4, 8, 16):
                    raise UsageError(f"--tensor-parallel-size {tp} leaves {(heads // tp) // local_kv} query heads "
                                     "per KV group on a DSA layer",
                                     hint="Step5 DSA kernels need 4, 8 or 16 (_validate_step5_dsa_parallel_geometry)")
                if hd != 192:
                    raise UsageError(f"Step5 DSA kernels need head size 192, got {hd}",
                                     hint="sparse_attention.py::_validate_step5_dsa_attention_contract")
        if tp > self.num_experts():
            raise UsageError(f"--tensor-parallel-size {tp} is greater than the {self.num_experts()} experts",
                             hint="Step5MoE refuses it")

    def kv_cache_layout(self, ctx: GraphContext) -> LayoutChoice:
        """Step5DSAAttentionBackend.supported_kv_cache_layouts: BLNHC only."""
        start, end = self.layer_range(ctx)
        return "block_outermost" if any(self.is_dsa(i) for i in range(start, end)) else "auto"

    # -- weights ------------------------------------------------------------------------
    def _attention_tensors(self, ctx: GraphContext, i: int) -> list[WeightTensor]:
        """Layer ``i``'s attention projections (names as vLLM's, one layer each)."""
        h, tp = self.config.hidden_size, ctx.tensor_parallel_size
        heads, kv, hd = self.geometry(i)
        q_rows, kv_rows = heads // tp * hd, max(1, kv // tp) * hd
        gate = bool(self._text.get("use_head_wise_attn_gate", False))
        out = [WeightTensor("self_attn.o_proj", "linear", h, q_rows, 1, True, in_features_full=heads * hd,
                            out_features_full=h)]
        if self.is_dsa(i):
            sp = self.sparse() or {}
            pd, local_groups = sp["proxy_dim"], _groups_per_rank(sp["index_tp"], tp)
            index_q = sp["heads"] // sp["index_tp"] * local_groups * pd
            index_kv = max(1, sp["k_heads"] // tp) * pd
            rows = q_rows + 2 * kv_rows + index_q + 2 * index_kv + heads // tp
            out += [
                WeightTensor("self_attn.qkv_indexer_proj", "linear", rows, h, 1, False),
                WeightTensor("self_attn.sparse_indexer_w", "linear",
                             sp["heads"] * local_groups // sp["index_tp"], h, 1, False),
                WeightTensor("self_attn.ssmax_s", "norm", heads, 1, dtype="float32"),
                WeightTensor("self_attn.sparse_indexer_q_norm+k_norm(+bias)", "norm", pd, 1, 3),
            ]
        elif gate and kv >= tp:
            out.append(WeightTensor("self_attn.qkvg_proj", "linear", q_rows + 2 * kv_rows + heads // tp, h, 1,
                                    True, in_features_full=h, out_features_full=heads * hd + 2 * kv * hd + heads))
        else:
            out.append(WeightTensor("self_attn.qkv_proj", "linear", q_rows + 2 * kv_rows, h, 1, True,
                                    in_features_full=h))
            if gate:
                out.append(WeightTensor("self_attn.g_proj", "linear", heads // tp, h, 1, True,
                                        in_features_full=h, out_features_full=heads))
        return out

    def _rope_tables(self, start: int, end: int) -> list[WeightTensor]:
        """One cos/sin cache per distinct ``get_rope`` key on the stage (main and indexer)."""
        pos_max = self.max_position()
        sp = self.sparse()
        tables: dict[str, WeightTensor] = {}
        for i in range(start, end):
            _, _, hd = self.geometry(i)
            kinds = [(hd, self.rope_params(i), "rotary_emb")]
            if sp is not None and self.is_dsa(i):
                kinds.append((sp["proxy_dim"], self.rope_params(i, indexer=True), "sparse_indexer_rotary_emb"))
            for head, params, name in kinds:
                rotary = int(head * float(params["partial_rotary_factor"]))
                positions = _rope_positions(self._text, params, pos_max)
                key = repr((head, positions, sorted(params.items())))
                tables.setdefault(key, WeightTensor(f"self_attn.{name}.cos_sin_cache", "buffer", positions, rotary))
        return list(tables.values())

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        h, tp = cfg.hidden_size, ctx.tensor_parallel_size
        start, end = self.layer_range(ctx)
        first = ctx.pipeline_rank == 0
        last = ctx.pipeline_rank == ctx.pipeline_parallel_size - 1
        tied = bool(cfg.tie_word_embeddings)
        vocab_rows = pad_vocab(cfg.vocab_size) // tp
        nd = self._norm_dtype()
        out: list[WeightTensor] = []
        if first or (tied and last):
            out.append(WeightTensor("model.embed_tokens", "embedding", vocab_rows, h))
        for i in range(start, end):
            out += self._attention_tensors(ctx, i)
            out.append(WeightTensor("self_attn.q_norm+k_norm", "norm", self.geometry(i)[2], 1, 2, dtype=nd))
        n = end - start
        if n:
            out += [WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * n, dtype=nd),
                    attention_scales("self_attn.attn", n)]
        m = sum(1 for i in range(start, end) if self.is_moe_layer(i))
        out += gated_mlp_tensors("mlp", cfg.intermediate_size, h, n - m, tp)
        out += self.moe_block_tensors(ctx, m)
        if last:
            out.append(WeightTensor("model.norm", "norm", h, 1, dtype=nd))
            if not tied:
                out.append(WeightTensor("lm_head", "lm_head", vocab_rows, h))
        out += self._rope_tables(start, end)
        if any(self.is_dsa(i) for i in range(start, end)):
            out.append(WeightTensor("attn.impl.adapter._workspace+_attention._int_workspace_buffer", "buffer",
                                    WORKSPACE_BYTES + INT_WORKSPACE_BYTES, 1, dtype="uint8"))
        return out

    # -- KV cache -----------------------------------------------------------------------
    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        tp = ctx.tensor_parallel_size
        window = None if ctx.disable_sliding_window else self._window()
        start, end = self.layer_range(ctx)
        specs: dict[str, Any] = {}
        for i in range(start, end):
            _, kv, hd = self.geometry(i)
            common = kv_spec_fields(ctx, num_kv_heads=max(1, kv // tp), head_size=hd)
            p = f"model.layers.{i}.self_attn.attn"
            if self.is_sliding(i) and window is not None:
                specs[p] = SlidingWindowSpec(sliding_window=window, **common)
                continue
            if not self.is_dsa(i):
                specs[p] = FullAttentionSpec(**common)
                continue
            block = ctx.block_size
            if block % 8:
                raise UsageError(f"--block-size {block} is not a multiple of 8",
                                 hint="Step5's sparse summary cache needs eight-token regions")
            kernel = math.gcd(8, block)  # MultipleOf(8): whole eight-token kernel blocks
            main = FullAttentionSpec(**common)
            align = None if kernel == block else main.with_block_size(kernel).page_size_bytes
            specs[p] = FullAttentionSpec(**common, block_stride_alignment=align)
            page = main.page_size_bytes
            rows = page // RING_ROW_BYTES
            if page % RING_ROW_BYTES or rows < 7 + ctx.num_speculative_tokens:
                raise UsageError(f"Step5's CSA tail ring needs {7 + ctx.num_speculative_tokens} rows of "
                                 f"{RING_ROW_BYTES} B in one {page}-byte KV page", hint="increase --block-size")
            specs[f"{p}.sparse_summary_cache"] = FullAttentionSpec(
                block_size=block, num_kv_heads=1, head_size=256, cache_dtype="uint8", dtype_bytes=1,
                head_size_v=0, tokens_per_state=8)
            specs[f"{p}.csa_tail_ring"] = CircularBufferSpec(
                block_size=block, num_kv_heads=1, head_size=page // (block * 2), cache_dtype="bfloat16",
                dtype_bytes=2, block_stride_alignment=RING_ROW_BYTES)
        return specs

    def notes(self) -> tuple[str, ...]:
        n = self.config.num_hidden_layers
        dsa = sum(1 for i in range(n) if self.is_dsa(i))
        swa = sum(1 for i in range(n) if self.is_sliding(i))
        out: tuple[str, ...] = ()
        if swa:
            out += (f"{swa} of {n} layers use a {self._window()}-token sliding window",)
        if dsa:
            out += (f"{dsa} of {n} layers use sparse attention (DSA) with a region-summary cache and an indexer "
                    "tail ring beside their KV; a 136 MiB FlashInfer workspace per rank is counted with the weights",)
        return out
