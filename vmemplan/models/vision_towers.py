"""Vision towers as pure shape lists: the tensors each encoder holds per rank.

Split out of :mod:`vmemplan.models.multimodal` (which re-exports the public names). Shapes
mirror vLLM 0.33.0's vllm/model_executor/models/qwen2_5_vl.py, qwen3_vl.py, pixtral.py,
clip.py and siglip.py (Mllama from 0.10.1.1 mllama.py); ``--mm-encoder-tp-mode weights``
shards a tower's linears over TP like the decoder, ``data`` keeps them whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from vmemplan.core.errors import ModelConfigError, UsageError
from vmemplan.core.graph import GraphContext, WeightTensor


def _vision(config: Any) -> Mapping[str, Any]:
    vc = config.raw.get("vision_config")
    if not isinstance(vc, Mapping):
        raise ModelConfigError(f"{config.architecture}: config.json lacks vision_config")
    return vc


def _need(vc: Mapping[str, Any], *keys: str) -> int:
    for k in keys:
        v = vc.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    raise ModelConfigError(f"config.json vision_config lacks {keys[0]!r}",
                           hint="vmemplan needs the vision tower's dimensions")


def _split(n: int, tp: int, what: str) -> int:
    if n % tp:
        raise UsageError(f"--tensor-parallel-size {tp} does not divide the vision tower's {what} ({n})",
                         hint="use a divisor, or --mm-encoder-tp-mode data to keep the tower whole")
    return n // tp


def _enc(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
    return WeightTensor(f"visual.{name}", "encoder", rows, cols, count)


def _patch_input(vc: Mapping[str, Any]) -> tuple[int, int, int]:
    """(patch size, image size, input channels) of a ViT's patch embedding."""
    return _need(vc, "patch_size"), _need(vc, "image_size"), int(vc.get("num_channels", 3))


class _MergerViT(NamedTuple):
    """The dimensions of a Qwen-VL-style vision transformer (patch embed, blocks, patch merger)."""

    width: int
    depth: int
    heads: int
    intermediate: int
    out: int  # the merger's output width (the text hidden size)
    patch: int
    temporal_patch: int
    merge: int


def _merger_vit(vc: Mapping[str, Any], *, width_keys: tuple[str, ...] = ("hidden_size",),
                patch_keys: tuple[str, ...] = ("patch_size",)) -> _MergerViT:
    """Read a Qwen-VL-style vision config (``depth`` / ``num_heads`` with their HF aliases;
    temporal patch and spatial merge 2 by default)."""
    return _MergerViT(
        _need(vc, *width_keys), _need(vc, "depth", "num_hidden_layers"), _need(vc, "num_heads", "num_attention_heads"),
        _need(vc, "intermediate_size"), _need(vc, "out_hidden_size"), _need(vc, *patch_keys),
        int(vc.get("temporal_patch_size", 2)), int(vc.get("spatial_merge_size", 2)))


def _tower_tp(ctx: GraphContext) -> int:
    return 1 if ctx.mm_encoder_tp_mode == "data" else ctx.tensor_parallel_size


def mrope_cache_positions(config: Any, positions_factor: int = 4) -> tuple[int, int]:
    """(positions, rotary_dim) of the multimodal rotary cache: ``max_position × 4`` rows.

    Mirrors vllm/model_executor/layers/rotary_embedding/mrope.py::MRotaryEmbedding
    (``cache_max_position_num = max_position_embeddings * positions_factor``, factor 4 from
    get_rope's ``mrope_positions_factor``; 0.11.0 already used × 4)."""
    text = config.text
    partial = text.get("partial_rotary_factor", 1.0)
    if not isinstance(partial, (int, float)) or partial <= 0:
        partial = 1.0
    return config.max_position_embeddings * positions_factor, int(config.head_dim * partial)


def _uses_mrope(config: Any) -> bool:
    rs = config.rope_scaling() or {}
    return "mrope_section" in rs or str(rs.get("type", rs.get("rope_type", ""))) == "mrope"


# --------------------------------------------------------------------------------------
# Towers (pure shape lists)
# --------------------------------------------------------------------------------------


def _qwen_vit(g: _MergerViT, vc: Mapping[str, Any], tp: int, *, gated: bool, norm_biases: bool) -> list[WeightTensor]:
    """The Qwen2-VL / Qwen2.5-VL ViT: Conv3d patch embed (no bias), ``depth`` blocks of [two norms,
    qkv (bias), proj (bias), MLP (bias): gated gate_up/down or fc1/fc2], the merger [ln_q,
    Linear(4c→4c), Linear(4c→out)] and a rotary cache of 8192 × head_dim/2."""
    c, depth, m = g.width, g.depth, g.width * g.merge * g.merge
    chans = int(vc.get("in_chans", vc.get("in_channels", 3)))
    _split(g.heads, tp, "attention heads")
    qkv = 3 * _split(c, tp, "width")
    i = _split(g.intermediate, tp, "MLP width")
    up, down = ("gate_up_proj", "down_proj") if gated else ("fc1", "fc2")
    up_rows, norms = (2 * i if gated else i), (2 if norm_biases else 1)
    return [
        _enc("patch_embed.proj", c, chans * g.temporal_patch * g.patch * g.patch),
        _enc("blocks.norm1+norm2" + (" (weight, bias)" if norm_biases else ""), c, 1, 2 * norms * depth),
        _enc("blocks.attn.qkv", qkv, c, depth), _enc("blocks.attn.qkv.bias", qkv, 1, depth),
        _enc("blocks.attn.proj", c, c // tp, depth), _enc("blocks.attn.proj.bias", c, 1, depth),
        _enc(f"blocks.mlp.{up}", up_rows, c, depth), _enc(f"blocks.mlp.{up}.bias", up_rows, 1, depth),
        _enc(f"blocks.mlp.{down}", c, i, depth), _enc(f"blocks.mlp.{down}.bias", c, 1, depth),
        _enc("merger.ln_q", c, 1, norms),
        _enc("merger.mlp.0", m // tp, m), _enc("merger.mlp.0.bias", m // tp),
        _enc("merger.mlp.2", g.out, m // tp), _enc("merger.mlp.2.bias", g.out),
        WeightTensor("visual.rotary_pos_emb.cos_sin_cache", "buffer", 8192, (c // g.heads) // 2),
    ]


def qwen2_5_vl_tower(vc: Mapping[str, Any], tp: int) -> list[WeightTensor]:
    """Qwen2.5-VL vision transformer (qwen2_5_vl.py::Qwen2_5_VisionTransformer, 0.33.0): RMSNorms
    and a gated MLP (:func:`_qwen_vit`)."""
    g = _merger_vit(vc, width_keys=("hidden_size", "embed_dim"), patch_keys=("patch_size", "spatial_patch_size"))
    return _qwen_vit(g, vc, tp, gated=True, norm_biases=False)


def qwen2_vl_tower(vc: Mapping[str, Any], tp: int) -> list[WeightTensor]:
    """Qwen2-VL vision transformer (qwen2_vl.py::Qwen2VisionTransformer, 0.33.0): LayerNorms
    (weight + bias) and fc1/fc2 of ``embed_dim × mlp_ratio`` (:func:`_qwen_vit`); ``hidden_size``
    is the merger's output width, ``embed_dim`` the tower's."""
    c = _need(vc, "embed_dim")
    g = _MergerViT(c, _need(vc, "depth"), _need(vc, "num_heads"), int(c * float(vc.get("mlp_ratio", 4))),
                   _need(vc, "hidden_size"), _need(vc, "patch_size", "spatial_patch_size"),
                   int(vc.get("temporal_patch_size", 2)), int(vc.get("spatial_merge_size", 2)))
    return _qwen_vit(g, vc, tp, gated=False, norm_biases=True)


def qwen3_vl_tower(vc: Mapping[str, Any], tp: int) -> list[WeightTensor]:
    """Qwen3-VL vision transformer (qwen3_vl.py::Qwen3_VisionTransformer, 0.33.0): Conv3d
    patch embed with bias, a learned position table (``num_position_embeddings`` × c),
    ``depth`` blocks of [LayerNorm ×2 (weight+bias), qkv (bias), proj (bias), fc1/fc2 (bias)],
    a merger and one deepstack merger per ``deepstack_visual_indexes`` entry (post-shuffle
    LayerNorm of 4c), and a rotary cache of 8192 × head_dim/2."""
    c, depth, heads, inter, out, patch, tpatch, merge = _merger_vit(vc)
    chans = int(vc.get("in_channels", vc.get("in_chans", 3)))
    npos = _need(vc, "num_position_embeddings")
    deep = len(vc.get("deepstack_visual_indexes") or [])
    _split(heads, tp, "attention heads")
    qkv = 3 * _split(c, tp, "width")
    i = _split(inter, tp, "MLP width")
    m = c * merge * merge

    def merger(prefix: str, norm_width: int, count: int) -> list[WeightTensor]:
        if not count:
            return []
        return [
            _enc(f"{prefix}.norm", norm_width, 1, 2 * count),
            _enc(f"{prefix}.linear_fc1", m // tp, m, count), _enc(f"{prefix}.linear_fc1.bias", m // tp, 1, count),
            _enc(f"{prefix}.linear_fc2", out, m // tp, count), _enc(f"{prefix}.linear_fc2.bias", out, 1, count),
        ]

    return [
        _enc("patch_embed.proj", c, chans * tpatch * patch * patch), _enc("patch_embed.proj.bias", c),
        _enc("pos_embed", npos, c),
        _enc("blocks.norm1+norm2", c, 1, 4 * depth),  # LayerNorm weight + bias, twice
        _enc("blocks.attn.qkv", qkv, c, depth), _enc("blocks.attn.qkv.bias", qkv, 1, depth),
        _enc("blocks.attn.proj", c, c // tp, depth), _enc("blocks.attn.proj.bias", c, 1, depth),
        _enc("blocks.mlp.linear_fc1", i, c, depth), _enc("blocks.mlp.linear_fc1.bias", i, 1, depth),
        _enc("blocks.mlp.linear_fc2", c, i, depth), _enc("blocks.mlp.linear_fc2.bias", c, 1, depth),
        *merger("merger", c, 1),
        *merger("deepstack_merger_list", m, deep),
        WeightTensor("visual.rotary_pos_emb.cos_sin_cache", "buffer", 8192, (c // heads) // 2),
    ]


def pixtral_tower(vc: Mapping[str, Any], tp: int, num_layers: int | None = None) -> list[WeightTensor]:
    """Pixtral-HF vision encoder (pixtral.py::PixtralHFVisionModel, 0.33.0): Conv2d patch
    embed (no bias), RMSNorm ln_pre, layers of [RMSNorm ×2, qkv, o_proj, gated MLP], no biases.
    (The 2-D rotary table is a small fp32 buffer, not counted.)"""
    c = _need(vc, "hidden_size")
    layers = num_layers if num_layers is not None else _need(vc, "num_hidden_layers")
    heads = _need(vc, "num_attention_heads")
    hd = int(vc.get("head_dim") or c // heads)
    inter = _need(vc, "intermediate_size")
    patch = _need(vc, "patch_size")
    chans = int(vc.get("num_channels", 3))
    h = _split(heads, tp, "attention heads")
    i = _split(inter, tp, "MLP width")
    return [
        _enc("patch_conv", c, chans * patch * patch),
        _enc("ln_pre", c),
        _enc("transformer.layers.attention_norm+ffn_norm", c, 1, 2 * layers),
        _enc("transformer.layers.attention.qkv_proj", 3 * h * hd, c, layers),
        _enc("transformer.layers.attention.o_proj", c, h * hd, layers),
        _enc("transformer.layers.feed_forward.gate_up_proj", 2 * i, c, layers),
        _enc("transformer.layers.feed_forward.down_proj", c, i, layers),
    ]


def _clip_like(vc: Mapping[str, Any], tp: int, layers: int, *, class_token: bool, pre_norm: bool,
               post_norm: bool, prefix: str) -> list[WeightTensor]:
    c = _need(vc, "hidden_size")
    heads = _need(vc, "num_attention_heads")
    inter = _need(vc, "intermediate_size")
    patch, size, chans = _patch_input(vc)
    _split(heads, tp, "attention heads")
    q = _split(c, tp, "width")
    i = _split(inter, tp, "MLP width")
    positions = (size // patch) ** 2 + (1 if class_token else 0)

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    out = [
        t("embeddings.patch_embedding", c, chans * patch * patch),
        t("embeddings.position_embedding", positions, c),
    ]
    if class_token:
        out.append(t("embeddings.class_embedding", c))
        # CLIPVisionEmbeddings' position_ids buffer: arange(num_positions), int64 (clip.py, 0.33.0)
        out.append(WeightTensor(f"{prefix}.embeddings.position_ids", "buffer", 1, positions, dtype="int64"))
    else:
        out.append(t("embeddings.patch_embedding.bias", c))
    if pre_norm:
        out.append(t("pre_layrnorm", c, 1, 2))
    out += [
        t("encoder.layers.layer_norm1+layer_norm2", c, 1, 4 * layers),
        t("encoder.layers.self_attn.qkv_proj", 3 * q, c, layers), t("encoder.layers.self_attn.qkv_proj.bias", 3 * q, 1, layers),
        t("encoder.layers.self_attn.out_proj", c, q, layers), t("encoder.layers.self_attn.out_proj.bias", c, 1, layers),
        t("encoder.layers.mlp.fc1", i, c, layers), t("encoder.layers.mlp.fc1.bias", i, 1, layers),
        t("encoder.layers.mlp.fc2", c, i, layers), t("encoder.layers.mlp.fc2.bias", c, 1, layers),
    ]
    if post_norm:
        out.append(t("post_layernorm", c, 1, 2))
    return out


def clip_tower(vc: Mapping[str, Any], tp: int, num_layers: int | None = None) -> list[WeightTensor]:
    """CLIP vision tower (clip.py::CLIPVisionTransformer, 0.33.0): class token, Conv2d patch
    embed (no bias), position table of patches + 1, pre-LayerNorm, layers with biased
    qkv/out/fc1/fc2 and two LayerNorms; the post-LayerNorm only when every layer is used."""
    total = _need(vc, "num_hidden_layers")
    layers = total if num_layers is None else num_layers
    return _clip_like(vc, tp, layers, class_token=True, pre_norm=True, post_norm=layers == total,
                      prefix="vision_tower.vision_model")


def siglip_tower(vc: Mapping[str, Any], tp: int, num_layers: int | None = None,
                 post_norm: bool = True) -> list[WeightTensor]:
    """SigLIP vision tower as Gemma-3 uses it (siglip.py::SiglipVisionTransformer, 0.33.0):
    Conv2d patch embed with bias, position table of patches (no class token), layers as CLIP,
    post-LayerNorm, no attention-pool head."""
    total = _need(vc, "num_hidden_layers")
    layers = total if num_layers is None else num_layers
    return _clip_like(vc, tp, layers, class_token=False, pre_norm=False, post_norm=post_norm,
                      prefix="vision_tower.vision_model")


def mllama_tower(vc: Mapping[str, Any], tp: int, text_hidden: int) -> list[WeightTensor]:
    """Llama-3.2-Vision encoder and projector (mllama.py::MllamaVisionModel, 0.6.6–0.10.x):
    unfold + ColumnParallelLinear patch embed (no bias), class token, gated position table
    ``P × c`` plus a tile-position table ``(aspect ratios + 1) × tiles·P·c`` (P = (image/patch)² + 1),
    two gated aspect-ratio tables ``(aspect ratios + 1) × tiles·c``, pre/post LayerNorm, a local
    transformer of ``num_hidden_layers`` and a gated global one of ``num_global_layers`` (qkv and
    o without bias, CLIP MLP with bias), and the multimodal projector Linear(vision_output_dim →
    text hidden, bias) with gathered output."""
    c = _need(vc, "hidden_size")
    local = _need(vc, "num_hidden_layers")
    glob = _need(vc, "num_global_layers")
    heads = _need(vc, "attention_heads", "num_attention_heads")
    inter = _need(vc, "intermediate_size")
    patch, size, chans = _patch_input(vc)
    tiles = _need(vc, "max_num_tiles")
    out_dim = _need(vc, "vision_output_dim")
    ratios = vc.get("supported_aspect_ratios")
    n_ratios = len(ratios) if isinstance(ratios, list) and ratios else 8
    n = local + glob
    P = (size // patch) ** 2 + 1
    _split(heads, tp, "attention heads")
    q = _split(c, tp, "width")
    i = _split(inter, tp, "MLP width")
    return [
        _enc("patch_embedding._linear", q, chans * patch * patch),
        _enc("class_embedding", c),
        _enc("gated_positional_embedding.embedding", P, c),
        _enc("gated_positional_embedding.tile_embedding", n_ratios + 1, tiles * P * c),
        _enc("gated_positional_embedding.gate", 1),
        _enc("pre/post_tile_positional_embedding.embedding", n_ratios + 1, tiles * c, 2),
        _enc("pre/post_tile_positional_embedding.gate", 1, 1, 2),
        _enc("layernorm_pre+layernorm_post", c, 1, 4),
        _enc("layers.self_attn.qkv_proj", 3 * q, c, n),
        _enc("layers.self_attn.o_proj", c, q, n),
        _enc("layers.mlp.fc1", i, c, n), _enc("layers.mlp.fc1.bias", i, 1, n),
        _enc("layers.mlp.fc2", c, i, n), _enc("layers.mlp.fc2.bias", c, 1, n),
        _enc("layers.input_layernorm+post_attention_layernorm", c, 1, 4 * n),
        _enc("global_transformer.layers.gate_attn+gate_ffn", 1, 1, 2 * glob),
        WeightTensor("multi_modal_projector", "encoder", text_hidden, out_dim),
        WeightTensor("multi_modal_projector.bias", "encoder", text_hidden, 1),
    ]


# --------------------------------------------------------------------------------------


def pixtral_rotary_buffers(vc: Any) -> list[WeightTensor]:
    """transformers pixtral/modeling_pixtral.py::PixtralVisionRotaryEmbedding (5.17+): ``inv_freq``
    and ``original_inv_freq``, fp32, ``head_dim / 2`` each (``arange(0, dim, 2)``)."""
    c = _need(vc, "hidden_size")
    hd = int(vc.get("head_dim") or c // _need(vc, "num_attention_heads"))
    return [WeightTensor("vision_tower.patch_positional_embedding.inv_freq+original_inv_freq", "buffer",
                         (hd + 1) // 2, 1, 2, dtype="float32")]


def pixtral_native_adapter(vc: Mapping[str, Any], text_hidden: int) -> list[WeightTensor]:
    """What vLLM's own Pixtral (pixtral.py::PixtralForConditionalGeneration, 0.33.0, params.json
    ``vision_encoder`` keys) builds after its VisionTransformer, all replicated on every rank:
    ``pre_mm_projector_norm`` (RMSNorm) when ``add_pre_mm_projector_layer_norm``; ``patch_merger``
    (ReplicatedLinear ``c·m² → c``, no bias) when ``mm_projector_id`` is "patch_merge";
    ``vision_language_adapter`` (ReplicatedLinear ``w_in`` c → text hidden and ``w_out`` text
    hidden → text hidden, biased unless ``adapter_bias`` is false).  The 2-D rotary table is
    computed lazily as a plain attribute (VisionTransformer.freqs_cis): no buffer."""
    c = _need(vc, "hidden_size")
    h = text_hidden
    out = []
    if vc.get("add_pre_mm_projector_layer_norm"):
        out.append(WeightTensor("pre_mm_projector_norm", "encoder", c, 1))
    if vc.get("mm_projector_id") == "patch_merge":
        m = int(vc.get("spatial_merge_size", 1))
        out.append(WeightTensor("patch_merger.merging_layer", "encoder", c, c * m * m))
    out += [WeightTensor("vision_language_adapter.w_in", "encoder", h, c),
            WeightTensor("vision_language_adapter.w_out", "encoder", h, h)]
    if vc.get("adapter_bias", True):
        out.append(WeightTensor("vision_language_adapter.w_in+w_out.bias", "encoder", h, 1, 2))
    return out


def split_mlp_projector(prefix: str, names: tuple[str, str], in_dim: int, mid: int, out: int,
                        tp: int) -> list[WeightTensor]:
    """A biased two-layer projector split over TP: a ColumnParallelLinear ``in_dim -> mid`` (rows
    and bias split) then a RowParallelLinear ``mid -> out`` (columns split, the bias whole on every
    rank), as vLLM's BAGEL connector, Ling-VL ``linear_proj`` and Cosmos 3 Edge projector build it."""
    first, second = f"{prefix}.{names[0]}", f"{prefix}.{names[1]}"
    return [
        WeightTensor(first, "encoder", mid // tp, in_dim), WeightTensor(f"{first}.bias", "encoder", mid // tp, 1),
        WeightTensor(second, "encoder", out, mid // tp), WeightTensor(f"{second}.bias", "encoder", out, 1),
    ]
