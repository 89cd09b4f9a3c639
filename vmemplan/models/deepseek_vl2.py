"""DeepSeek-VL2 (``DeepseekVLV2ForCausalLM``: deepseek-vl2-tiny / -small / deepseek-vl2): a DeepSeek-V2
MoE decoder (MLA, or plain multi-head attention when the config's ``qk_nope_head_dim`` and
``qk_rope_head_dim`` are 0, as in -tiny) plus timm's SigLIP-SO400M ViT, an MLP projector and two
learned separator vectors.

vllm/model_executor/models/deepseek_vl2.py (0.33.0), ``DeepseekVLV2ForCausalLM.__init__``:

* unless images are limited to 0 per prompt (``_mark_tower_model``): ``vision =
  timm.create_model("vit_so400m_patch14_siglip_384.webli", num_classes=0, dynamic_img_size=True)``
  (a fixed timm model whatever ``vision_config`` says: width 1152, 27 blocks, MLP 4304, patch 14,
  384² images so 27² = 729 positions, a "map" attention-pool head), cast to the model dtype; with
  TP > 1 ``patch_vit_for_tp`` replaces every ``timm.layers.Mlp``'s fc1 / fc2 (the blocks' and the
  pool head's) by column / row-parallel linears and leaves attention whole;
  ``projector = MlpProjector`` (``downsample_mlp_gelu``: Linear(input_dim·r² → n_embed·ratio), then
  ``depth - 1`` Linears, all biased, plain ``nn.Linear``, never sharded); ``image_newline`` and
  ``view_seperator`` (``n_embed`` each);
* the language model from ``language_config`` (vllm/model_executor/models/deepseek_v2.py):
  ``DeepseekV2DecoderLayer`` takes ``DeepseekAttention`` (fused qkv_proj and o_proj without bias, a
  rotary cache of ``max_position × head_dim``, head_dim = hidden / heads) when both qk head dims are
  0, else the MLA attention of :class:`vmemplan.models.deepseek.DeepseekMLA`.

A config.json of these checkpoints has no ``architectures`` key: vLLM's DeepseekVLV2Config defaults it
(:func:`vmemplan.model_config._with_library_defaults` does the same).

Tokens per image: ``DeepseekVL2ProcessingInfo.get_num_image_tokens`` of the candidate resolution
with the most tokens (a global 384² view of ``h × (w + 1)`` tokens plus the tiles' ``(th·h) ×
(tw·w + 1)`` plus 1, h = w = ceil(27 / 2) = 14).
"""

from __future__ import annotations

import math
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import FullAttentionSpec, kv_dtype_bytes
from vmemplan.core.units import dtype_bytes
from vmemplan.models.base import Adapter, register, rope_cache_positions
from vmemplan.models.deepseek import DeepseekMLA
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _split

__all__ = ["DeepseekVL2", "DeepseekOCR", "siglip_so400m_timm_tower", "mlp_projector_tensors", "deepseek_vl2_image_tokens",
           "sam_vit_b_tensors", "deep_clip_tensors", "deepseek_ocr_image_tokens"]

#: timm vit_so400m_patch14_siglip_384: width, blocks, heads, MLP width, patch, image size
SO400M = {"width": 1152, "layers": 27, "heads": 16, "mlp": 4304, "patch": 14, "image": 384}
#: the DeepSeek-VL2 processor's downsample ratio and tile size
VL2_DOWNSAMPLE = 2
VL2_TILE = 384


def siglip_so400m_timm_tower(tp: int, *, width: int = 1152, layers: int = 27, mlp: int = 4304, patch: int = 14,
                             image: int = 384, prefix: str = "vision") -> list[WeightTensor]:
    """timm VisionTransformer ``vit_so400m_patch14_siglip_384`` with ``num_classes=0`` (0.33.0's
    ``_init_vision_module``): Conv2d patch embed (bias), a ``(image/patch)²`` position table, blocks of
    [LayerNorm ×2, qkv (bias), proj (bias), Mlp fc1/fc2 (bias)], a final LayerNorm and the MAP head
    [latent, q (bias), kv (bias), proj (bias), LayerNorm, Mlp]; the Mlps split over TP
    (``patch_vit_for_tp``: fc1 column-, fc2 row-parallel)."""
    c = width
    i = _split(mlp, tp, "SigLIP MLP width")

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    return [
        t("patch_embed.proj", c, 3 * patch * patch), t("patch_embed.proj.bias", c),
        t("pos_embed", (image // patch) ** 2, c),
        t("blocks.norm1+norm2", c, 1, 4 * layers),
        t("blocks.attn.qkv", 3 * c, c, layers), t("blocks.attn.qkv.bias", 3 * c, 1, layers),
        t("blocks.attn.proj", c, c, layers), t("blocks.attn.proj.bias", c, 1, layers),
        t("blocks.mlp.fc1", i, c, layers), t("blocks.mlp.fc1.bias", i, 1, layers),
        t("blocks.mlp.fc2", c, i, layers), t("blocks.mlp.fc2.bias", c, 1, layers),
        t("norm", c, 1, 2),
        t("attn_pool.latent", c),
        t("attn_pool.q", c, c), t("attn_pool.q.bias", c),
        t("attn_pool.kv", 2 * c, c), t("attn_pool.kv.bias", 2 * c),
        t("attn_pool.proj", c, c), t("attn_pool.proj.bias", c),
        t("attn_pool.norm", c, 1, 2),
        t("attn_pool.mlp.fc1", i, c), t("attn_pool.mlp.fc1.bias", i),
        t("attn_pool.mlp.fc2", c, i), t("attn_pool.mlp.fc2.bias", c),
    ]


def mlp_projector_tensors(pc: Any) -> list[WeightTensor]:
    """deepseek_vl2.py::MlpProjector with vLLM's MlpProjectorConfig defaults
    (vllm/transformers_utils/configs/deepseek_vl2.py: downsample_mlp_gelu, input_dim 1152, n_embed 2048,
    depth 2, mlp_ratio 1, downsample_ratio 2), plus ``image_newline`` and ``view_seperator``."""
    kind = pc.get("projector_type", "downsample_mlp_gelu")
    n = int(pc.get("n_embed", 2048))
    d_in = int(pc.get("input_dim", 1152))
    out: list[WeightTensor] = []
    if kind == "linear":
        out += [WeightTensor("projector.layers", "encoder", n, d_in), WeightTensor("projector.layers.bias", "encoder", n, 1)]
    else:
        depth = int(pc.get("depth", 2))
        ratio = int(pc.get("mlp_ratio", 1))
        r = int(pc.get("downsample_ratio", 2))
        out += [WeightTensor("projector.layers.0", "encoder", n * ratio, d_in * r * r),
                WeightTensor("projector.layers.0.bias", "encoder", n * ratio, 1)]
        if depth > 2:
            out += [WeightTensor("projector.layers.mid", "encoder", n * ratio, n * ratio, depth - 2),
                    WeightTensor("projector.layers.mid.bias", "encoder", n * ratio, 1, depth - 2)]
        out += [WeightTensor("projector.layers.last", "encoder", n, n * ratio),
                WeightTensor("projector.layers.last.bias", "encoder", n, 1)]
    return out + [WeightTensor("image_newline+view_seperator", "encoder", n, 1, 2)]


def deepseek_vl2_image_tokens(width: int, height: int, *, image_size: int = VL2_TILE, patch_size: int = 14,
                              downsample_ratio: int = VL2_DOWNSAMPLE) -> int:
    """DeepseekVL2ProcessingInfo.get_num_image_tokens for an image that is itself a candidate
    resolution (its best resolution is its own size)."""
    tw, th = width // image_size, height // image_size
    h = w = math.ceil((image_size // patch_size) / downsample_ratio)
    return h * (w + 1) + (th * h) * (tw * w + 1) + 1


@register
class DeepseekVL2(VisionEncoderMixin, DeepseekMLA):
    """DeepSeek-VL2: the DeepSeek-V2 MoE decoder (MLA or MHA) plus timm's SigLIP-SO400M."""

    architectures = ("DeepseekVLV2ForCausalLM",)
    modalities = ("image",)
    #: bare ``nn.Parameter``s assigned inside ``_mark_tower_model``: kept when images are limited to 0
    bare_tower_parameters = ("image_newline+view_seperator",)
    patches_per_token = VL2_DOWNSAMPLE * VL2_DOWNSAMPLE

    # -- the language model's attention ---------------------------------------------
    @property
    def use_mha(self) -> bool:
        """deepseek_v2.py::DeepseekV2DecoderLayer: ``use_mha`` when both qk head dims are 0."""
        text = self.config.text
        return self.config.model_type == "deepseek" or (
            int(text.get("qk_nope_head_dim", 128) or 0) == 0 and int(text.get("qk_rope_head_dim", 64) or 0) == 0)

    @property
    def latent_head_size(self) -> int:  # type: ignore[override]
        """No latent cache under MHA (AttributeError, so ``hasattr`` reports no MLA)."""
        if self.use_mha:
            raise AttributeError("latent_head_size: DeepSeek-VL2's language model uses multi-head attention")
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def mha_head_dim(self) -> int:
        return self.config.hidden_size // self.config.num_attention_heads

    def attention_tensors(self, n: int, ctx: GraphContext, input_size: int | None = None) -> list[WeightTensor]:
        if not self.use_mha:
            return super().attention_tensors(n, ctx, input_size)
        tp = ctx.tensor_parallel_size
        h, hd = self.config.hidden_size, self.mha_head_dim
        heads = self.config.num_attention_heads
        q = heads // tp * hd
        kv = max(1, self.config.num_key_value_heads // tp) * hd
        return [
            WeightTensor("self_attn.qkv_proj", "linear", q + 2 * kv, h, n, True, in_features_full=h),
            WeightTensor("self_attn.o_proj", "linear", h, q, n, True, in_features_full=heads * hd),
            attention_scales("self_attn.attn", n),
        ]

    def rope_cache(self, ctx: GraphContext | None = None) -> WeightTensor:
        if not self.use_mha:
            return super().rope_cache(ctx)
        positions, _ = rope_cache_positions(self.config)
        return WeightTensor("rotary_emb.cos_sin_cache", "buffer", positions, self.mha_head_dim)

    def validate_parallel(self, ctx: GraphContext) -> None:
        if self.use_mha:
            return Adapter.validate_parallel(self, ctx)
        return super().validate_parallel(ctx)

    def resolve_block_size(self, ctx: GraphContext, *, user_block_size: int | None, default: int) -> int:
        if self.use_mha:
            return Adapter.resolve_block_size(self, ctx, user_block_size=user_block_size, default=default)
        return super().resolve_block_size(ctx, user_block_size=user_block_size, default=default)

    def resolve_cache_dtype(self, ctx: GraphContext, cache_dtype: str) -> str:
        if self.use_mha:
            return cache_dtype
        return super().resolve_cache_dtype(ctx, cache_dtype)

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        if not self.use_mha:
            return super().kv_cache_specs(ctx)
        heads = max(1, self.config.num_key_value_heads // ctx.tensor_parallel_size)
        spec = FullAttentionSpec(block_size=ctx.block_size, num_kv_heads=heads, head_size=self.mha_head_dim,
                                 cache_dtype=ctx.model_dtype if ctx.cache_dtype == "auto" else ctx.cache_dtype,
                                 dtype_bytes=kv_dtype_bytes(ctx.cache_dtype, dtype_bytes(ctx.model_dtype)))
        return {f"language.model.layers.{i}.self_attn.attn": spec for i in self._layer_indices(ctx)}

    # -- the vision side -------------------------------------------------------------
    def encoder_dims(self, config: Any) -> tuple[int, int]:
        return SO400M["width"], SO400M["mlp"]

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        # patch_vit_for_tp follows the TP world size: DeepseekVLV2ForCausalLM does not declare
        # supports_encoder_tp_data, so --mm-encoder-tp-mode data does not keep it whole
        pc = config.raw.get("projector_config") or {}
        return siglip_so400m_timm_tower(ctx.tensor_parallel_size) + mlp_projector_tensors(pc)


    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        cands = config.raw.get("candidate_resolutions") or [[VL2_TILE, VL2_TILE]]
        best = max(deepseek_vl2_image_tokens(int(w), int(hgt)) for hgt, w in cands)
        return {"image": best}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)

    def notes(self) -> tuple[str, ...]:
        attn = ("multi-head attention (qk head dims 0): a full-attention KV cache of "
                f"{self.config.num_key_value_heads} heads x {self.mha_head_dim}") if self.use_mha else super().notes()[0]
        return (attn, "vision tower: timm vit_so400m_patch14_siglip_384 whatever vision_config says (vLLM builds "
                      "that fixed model)")


# --------------------------------------------------------------------------------------
# DeepSeek-OCR
# --------------------------------------------------------------------------------------

#: deepencoder.py::build_sam_vit_b (0.33.0): width 768, 12 blocks, head_dim 64, global-attention
#: blocks 2/5/8/11 (others windowed, window 14), 1024² images of 16-pixel patches, neck 256, then
#: the 512 and 1024-channel convolutions
SAM_B = {"width": 768, "layers": 12, "mlp": 3072, "head_dim": 64, "global": (2, 5, 8, 11), "window": 14,
         "image": 1024, "patch": 16, "neck": 256, "down": (512, 1024)}
#: deepseek_ocr.py's CLIPVisionConfig: hidden 1024, MLP 4096, 16 heads, 24 layers, 224² / 14
CLIP_L = {"width": 1024, "mlp": 4096, "heads": 16, "layers": 24, "image": 224, "patch": 14}
#: vllm/transformers_utils/processors/deepseek_ocr.py ("Gundam": base 1024, tiles 640, 2..6 tiles)
OCR_BASE, OCR_TILE, OCR_MIN_CROPS, OCR_MAX_CROPS = 1024, 640, 2, 6


def sam_vit_b_tensors(last_conv: int = SAM_B["down"][1]) -> list[WeightTensor]:
    """deepencoder.py::ImageEncoderViT as build_sam_vit_b makes it: plain nn layers, never sharded:
    Conv2d patch embed (bias), an absolute ``64 × 64 × 768`` position table, blocks of [LayerNorm ×2,
    qkv (bias), proj (bias), MLP lin1/lin2 (bias), relative-position tables ``(2·size - 1) × 64`` for
    h and w, size 64 in the global blocks and 14 (the window) in the others], the neck [1×1 conv,
    LayerNorm2d, 3×3 conv, LayerNorm2d] and net_2 / net_3 (3×3 convs, no bias; net_3's output
    ``last_conv_output``: 1024, 896 in DeepSeek-OCR-2)."""
    c, n, m, hd = SAM_B["width"], SAM_B["layers"], SAM_B["mlp"], SAM_B["head_dim"]
    grid = SAM_B["image"] // SAM_B["patch"]
    glob = len(SAM_B["global"])
    neck = SAM_B["neck"]
    d1, d2 = SAM_B["down"][0], last_conv

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"sam_model.{name}", "encoder", rows, cols, count)

    return [
        t("patch_embed.proj", c, 3 * SAM_B["patch"] ** 2), t("patch_embed.proj.bias", c),
        t("pos_embed", grid * grid, c),
        t("blocks.norm1+norm2", c, 1, 4 * n),
        t("blocks.attn.qkv", 3 * c, c, n), t("blocks.attn.qkv.bias", 3 * c, 1, n),
        t("blocks.attn.proj", c, c, n), t("blocks.attn.proj.bias", c, 1, n),
        t("blocks.mlp.lin1", m, c, n), t("blocks.mlp.lin1.bias", m, 1, n),
        t("blocks.mlp.lin2", c, m, n), t("blocks.mlp.lin2.bias", c, 1, n),
        t("blocks.attn.rel_pos_h+w (global)", 2 * grid - 1, hd, 2 * glob),
        t("blocks.attn.rel_pos_h+w (windowed)", 2 * SAM_B["window"] - 1, hd, 2 * (n - glob)),
        t("neck.0", neck, c), t("neck.2", neck, neck * 9), t("neck.1+3", neck, 1, 4),
        t("net_2", d1, neck * 9), t("net_3", d2, d1 * 9),
    ]


def deep_clip_tensors(tp: int) -> list[WeightTensor]:
    """deepencoder.py::DeepCLIPVisionTransformer (vLLM's CLIP encoder layers: qkv / out_proj / fc1 / fc2
    shard over TP): Conv2d patch embed (no bias), class token, ``(224/14)² + 1`` positions and their
    int64 ``position_ids``, pre-LayerNorm, layers of [LayerNorm ×2 and the biased linears]; no
    post-LayerNorm."""
    c, i, n = CLIP_L["width"], _split(CLIP_L["mlp"], tp, "CLIP MLP width"), CLIP_L["layers"]
    _split(CLIP_L["heads"], tp, "CLIP attention heads")
    q = c // tp
    npos = (CLIP_L["image"] // CLIP_L["patch"]) ** 2 + 1

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"vision_model.{name}", "encoder", rows, cols, count)

    return [
        t("embeddings.patch_embedding", c, 3 * CLIP_L["patch"] ** 2), t("embeddings.class_embedding", c),
        t("embeddings.position_embedding", npos, c),
        WeightTensor("vision_model.embeddings.position_ids", "buffer", 1, npos, dtype="int64"),
        t("pre_layrnorm", c, 1, 2),
        t("transformer.layers.layer_norm1+layer_norm2", c, 1, 4 * n),
        t("transformer.layers.self_attn.qkv_proj", 3 * q, c, n), t("transformer.layers.self_attn.qkv_proj.bias", 3 * q, 1, n),
        t("transformer.layers.self_attn.out_proj", c, q, n), t("transformer.layers.self_attn.out_proj.bias", c, 1, n),
        t("transformer.layers.mlp.fc1", i, c, n), t("transformer.layers.mlp.fc1.bias", i, 1, n),
        t("transformer.layers.mlp.fc2", c, i, n), t("transformer.layers.mlp.fc2.bias", c, 1, n),
    ]


def _ocr_tiles(width: int, height: int, *, max_crops: int = OCR_MAX_CROPS, tile: int = OCR_TILE) -> tuple[int, int]:
    """processors/deepseek_ocr.py::count_tiles: the (w, h) tile grid of 2..``max_crops`` tiles whose
    aspect ratio is closest (ties: the larger grid when the image covers half of it)."""
    ratios = sorted({(i, j) for n in range(OCR_MIN_CROPS, max_crops + 1) for i in range(1, n + 1)
                     for j in range(1, n + 1) if OCR_MIN_CROPS <= i * j <= max_crops}, key=lambda r: r[0] * r[1])
    aspect, best, best_diff = width / height, (1, 1), float("inf")
    for r in ratios:
        diff = abs(aspect - r[0] / r[1])
        if diff < best_diff:
            best_diff, best = diff, r
        elif diff == best_diff and width * height > 0.5 * tile * tile * r[0] * r[1]:
            best = r
    return best


def deepseek_ocr_image_tokens(width: int, height: int, max_crops: int = OCR_MAX_CROPS) -> int:
    """deepseek_ocr.py::DeepseekOCRProcessingInfo.get_num_image_tokens (cropping on): a global
    ``h × (w + 1)`` view (h = ceil(1024/16/4) = 16) plus, above one tile, ``(th·10) × (tw·10 + 1)``;
    up to ``max_crops`` tiles (6; Unlimited-OCR: 32)."""
    tw, th = (1, 1) if width <= OCR_TILE and height <= OCR_TILE else _ocr_tiles(width, height, max_crops=max_crops)
    h = math.ceil((OCR_BASE // 16) / 4)
    h2 = math.ceil((OCR_TILE // 16) / 4)
    local = (th * h2) * (tw * h2 + 1) if (tw > 1 or th > 1) else 0
    return h * (h + 1) + local + 1


@register
class DeepseekOCR(DeepseekVL2):
    """DeepSeek-OCR: the DeepSeek-V2 MoE decoder plus the deepencoder (SAM ViT-B and a CLIP-L whose
    layers shard over TP), a linear projector and the two separator vectors (deepseek_ocr.py, 0.33.0)."""

    architectures = ("DeepseekOCRForCausalLM",)
    patches_per_token = 16  # downsample_ratio 4, squared

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        return CLIP_L["width"], CLIP_L["mlp"]

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        pc = config.raw.get("projector_config") or {}
        return sam_vit_b_tensors() + deep_clip_tensors(ctx.tensor_parallel_size) + mlp_projector_tensors(pc)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """The 1280² dummy (get_image_size_with_most_features with base 1024 and tiles 640)."""
        return {"image": deepseek_ocr_image_tokens(2 * OCR_TILE, 2 * OCR_TILE)}

    def notes(self) -> tuple[str, ...]:
        return (super().notes()[0], "vision tower: vLLM's fixed deepencoder (SAM ViT-B + CLIP-L) whatever "
                "vision_config says")
