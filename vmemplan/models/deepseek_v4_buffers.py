"""DeepSeek-V4 tensors besides the projections: rotary caches, compressor position
embeddings, the indexer's compressor, hash-routing tables, hyper-connection scalars and the
shared top-k buffer (vLLM 0.33.0, vllm/models/deepseek_v4/).

Split out of :mod:`vmemplan.models.deepseek_v4` (which calls :func:`v4_extra_tensors`) to
keep that module under its size limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vmemplan.core.graph import GraphContext, WeightTensor

if TYPE_CHECKING:  # pragma: no cover
    from vmemplan.models.deepseek_v4 import DeepseekV4

__all__ = ["biased_gate_layers", "padded_sink_heads", "rope_cache_keys", "v4_extra_tensors"]

#: q-head counts the FlashInfer sparse-MLA kernels take (nvidia/flashinfer_sparse.py)
_FLASHINFER_Q_HEADS = (8, 16, 32, 64, 128)


def padded_sink_heads(local_heads: int, sm_major: int | None) -> int:
    """Heads ``attn_sink`` is allocated at: the attention class pads the local q heads
    (vllm/models/deepseek_v4/attention.py::DeepseekV4Attention.__init__ with
    ``get_padded_num_q_heads``).  SM 12 defaults to FlashInfer sparse MLA (next of 8, 16,
    32, 64, 128: nvidia/flashinfer_sparse.py::_pad_to_supported_q_heads), every other CUDA
    part to FlashMLA (64 or 128: nvidia/flashmla.py::DeepseekV4FlashMLAAttention.
    get_padded_num_q_heads); nvidia/model.py::_select_dsv4_attn_cls (0.33.0)."""
    if sm_major == 12:
        return next((s for s in _FLASHINFER_Q_HEADS if local_heads <= s), local_heads)
    return 64 if local_heads <= 64 else 128


def _rope_params(text: dict[str, Any]) -> dict[str, Any]:
    rp = text.get("rope_parameters") or text.get("rope_scaling") or {}
    return dict(rp) if isinstance(rp, dict) else {}


def rope_cache_keys(text: dict[str, Any], ratios: list[int]) -> list[tuple[Any, ...]]:
    """One key per distinct fp32 cos/sin cache the layers of ``ratios`` share.

    vllm/models/deepseek_v4/common/rope.py::build_deepseek_v4_rope gives compressed layers
    (ratio > 1) ``compress_rope_theta`` and, unless their rope type is "default", YaRN over
    ``original_max_position_embeddings × factor`` positions; the others plain
    ``rope_theta`` with factor 1 over ``max_position_embeddings``.  get_rope caches one module
    per distinct argument set, and DeepseekV4ScalingRotaryEmbedding
    (rotary_embedding/deepseek_scaling_rope.py) registers ``cos_sin_cache`` in fp32 with
    ``original_max × factor`` rows of ``qk_rope_head_dim``.  Key: (theta, rows, type)."""
    max_pos = int(text.get("max_position_embeddings") or 0)
    rp = _rope_params(text)
    if isinstance(rp.get("main"), dict) and isinstance(rp.get("compress"), dict):
        by_kind = {True: dict(rp["compress"]), False: dict(rp["main"])}
    else:
        by_kind = {True: rp, False: rp}
    keys: list[tuple[Any, ...]] = []
    for compressed in sorted({r > 1 for r in ratios}):
        p = by_kind[compressed]
        rtype = str(p.get("rope_type") or p.get("type") or "default")
        if compressed and rtype != "default":
            rows = int(int(p.get("original_max_position_embeddings") or max_pos) * float(p.get("factor") or 1.0))
            key: tuple[Any, ...] = (float(text.get("compress_rope_theta") or 0), rows, rtype)
        else:
            theta = text.get("compress_rope_theta") if compressed else text.get("rope_theta")
            key = (float(theta or 0), max_pos, "plain")
        if key not in keys:
            keys.append(key)
    return keys


def v4_extra_tensors(model: DeepseekV4, ctx: GraphContext, layers: list[int]) -> list[WeightTensor]:
    """The tensors of one rank's DeepSeek-V4 stage that the projection list leaves out:

    * per compressor (ratio > 1) its ``ape`` ``[ratio, coff × head_dim]`` fp32 (coff 2 at
      ratio 4) (vllm/models/deepseek_v4/compressor.py::DeepseekCompressor.__init__);
    * per indexer (ratio 4) its own compressor at ``index_head_dim``: unquantized, replicated
      ``fused_wkv_wgate`` ``[2 × 2 × index_head_dim, hidden]``, a norm and an ``ape``
      ``[4, 2 × index_head_dim]`` fp32 (attention.py::DeepseekV4Indexer.__init__);
    * the hash-routed layers (``layer < num_hash_layers``): ``gate.tid2eid`` ``[vocab,
      num_experts_per_tok]`` int32 (nvidia/model.py::DeepseekV4MoE.__init__);
    * per layer the hyper-connection ``hc_{attn,ffn}_base`` ``[(2 + hc) hc]`` and
      ``hc_{attn,ffn}_scale`` ``[3]`` fp32, and once per stage ``hc_head_fn`` ``[hc, hc ×
      hidden]``, ``hc_head_base`` ``[hc]``, ``hc_head_scale`` ``[1]`` fp32
      (DeepseekV4DecoderLayer / DeepseekV4Model.__init__);
    * the fp32 cos/sin caches (:func:`rope_cache_keys`), ``[rows, qk_rope_head_dim]``;
    * the shared ``topk_indices_buffer`` ``[max_num_batched_tokens, index_topk]`` int32
      (DeepseekV4Model.__init__, allocated on the device with the model).
    """
    text = model.config.text
    out: list[WeightTensor] = []
    if not layers:
        return out
    hd = model.head_dim
    comp = [i for i in layers if model._owns_compressor(i)]
    for ratio in sorted({model.ratio(i) for i in comp}):
        n = sum(1 for i in comp if model.ratio(i) == ratio)
        coff = 2 if ratio == 4 else 1
        out.append(WeightTensor(f"attn.compressor.ape[ratio {ratio}]", "norm", ratio, coff * hd, n, dtype="float32"))
    idx = model._indexer_layers(layers)
    if idx:
        idim = int(text.get("index_head_dim", 128))
        h = model.config.hidden_size
        out += [
            WeightTensor("attn.indexer.compressor.fused_wkv_wgate", "linear", 2 * 2 * idim, h, len(idx), False),
            WeightTensor("attn.indexer.compressor.norm", "norm", idim, 1, len(idx)),
            WeightTensor("attn.indexer.compressor.ape", "norm", 4, 2 * idim, len(idx), dtype="float32"),
        ]
    hashed = _hash_layers(text)
    n_hash = sum(1 for i in layers if i < min(hashed, model.config.num_hidden_layers))
    if n_hash:
        out.append(WeightTensor("ffn.gate.tid2eid", "buffer", int(model.config.vocab_size),
                                int(text.get("num_experts_per_tok") or 1), n_hash, dtype="int32"))
    hc = int(text.get("hc_mult", 1) or 1)
    if hc > 1:
        mix = (2 + hc) * hc
        out.append(WeightTensor("hc_attn_base+hc_ffn_base", "norm", mix, 1, 2 * len(layers), dtype="float32"))
        out.append(WeightTensor("hc_attn_scale+hc_ffn_scale", "norm", 3, 1, 2 * len(layers), dtype="float32"))
        out += [
            WeightTensor("model.hc_head_fn", "norm", hc, hc * model.config.hidden_size, dtype="float32"),
            WeightTensor("model.hc_head_base+hc_head_scale", "norm", hc + 1, 1, dtype="float32"),
        ]
    rope_dim = int(text.get("qk_rope_head_dim", 64))
    for theta, rows, _kind in rope_cache_keys(text, [model.ratio(i) for i in layers]):
        out.append(WeightTensor(f"attn.rotary_emb.cos_sin_cache[theta {theta:g}]", "buffer", rows, rope_dim,
                                dtype="float32"))
    if text.get("index_topk"):
        out.append(WeightTensor("model.topk_indices_buffer", "buffer", ctx.max_num_batched_tokens,
                                int(text["index_topk"]), dtype="int32"))
    return out


def _hash_layers(text: dict[str, Any]) -> int:
    """Hash-routed MoE layers: ``mlp_layer_types.count("hash_moe")`` as vLLM reads it
    (nvidia/model.py::DeepseekV4DecoderLayer), else ``num_hash_layers``."""
    types = text.get("mlp_layer_types")
    if isinstance(types, list):
        return sum(1 for t in types if t == "hash_moe")
    return int(text.get("num_hash_layers") or 0)


def biased_gate_layers(model: DeepseekV4, layers: list[int], experts: int) -> int:
    """MoE layers (of ``experts`` routed experts) with an fp32 ``e_score_correction_bias``:
    ``topk_method`` "noaux_tc", hash-routed layers excepted
    (vllm/models/deepseek_v4/nvidia/model.py::DeepseekV4MoE.__init__, 0.33.0)."""
    if model.config.text.get("topk_method") != "noaux_tc":
        return 0
    hashed = min(_hash_layers(model.config.text), model.config.num_hidden_layers)
    return sum(1 for i in layers if model.routed_experts(i) == experts and not i < hashed)
