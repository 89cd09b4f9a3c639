"""DeepSeek-OCR-2 (``DeepseekOCR2ForCausalLM``, deepseek-ai/DeepSeek-OCR-2): DeepEncoder-V2 (SAM ViT-B
and a Qwen2 decoder run as an encoder over learned queries), a linear projector and a separator
vector in front of DeepSeek-OCR's DeepSeek-V2 MoE decoder.

vllm/model_executor/models/deepseek_ocr2.py::DeepseekOCR2ForCausalLM.__init__ (0.33.0), under
``_mark_tower_model(vllm_config, "image")``:

* ``sam_model`` = deepencoder.py::ImageEncoderViT as DeepSeek-OCR builds it but with
  ``last_conv_output=896`` (:func:`vmemplan.models.deepseek_vl2.sam_vit_b_tensors`);
* ``qwen2_model`` = deepencoder2.py::build_qwen2_decoder_as_encoder (:func:`qwen2_encoder_tensors`):
  a transformers ``Qwen2Model`` (24 layers, 896 wide, 14 heads / 2 KV heads of 64, MLP 4864) built
  with plain ``nn.Linear`` layers (replicated on every rank: q/k/v with bias, o_proj without,
  gate/up/down, two RMSNorms a layer, the final norm), its ``embed_tokens`` deleted, the rotary
  module's ``inv_freq`` and ``original_inv_freq`` float32 buffers (head_dim / 2 each), and the
  learned queries ``query_768`` nn.Embedding(144, 896) and ``query_1024`` nn.Embedding(256, 896);
* ``projector`` = deepseek_vl2.py::MlpProjector (``linear``: 896 → n_embed) and ``view_seperator``
  (``n_embed``; no ``image_newline`` in this model);

then ``init_vllm_registered_model(hf_config=text_config)``: the DeepSeek-V2 decoder of
:class:`vmemplan.models.deepseek_vl2.DeepseekOCR` (multi-head attention when the qk head dims are 0).
No ``supports_encoder_tp_data``.

Tokens per image (DeepseekOCR2ProcessingInfo.get_num_image_tokens, crop mode): a 1024² global view of
``16 × 16`` tokens, above one 768² tile ``(th·12) × (tw·12)`` local tokens (no row newlines), plus
one; the largest dummy is 1536² (``get_image_size_with_most_features``), 2 × 2 tiles: 833 tokens.
"""

from __future__ import annotations

import math
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.deepseek_vl2 import OCR_BASE, DeepseekOCR, _ocr_tiles, mlp_projector_tensors, sam_vit_b_tensors

__all__ = ["DeepseekOCR2", "qwen2_encoder_tensors", "deepseek_ocr2_image_tokens"]

#: deepencoder2.py::build_qwen2_decoder_as_encoder defaults: layers, width, heads, KV heads, MLP
QWEN2_ENC = {"layers": 24, "width": 896, "heads": 14, "kv_heads": 2, "mlp": 4864}
#: deepencoder2.py::Qwen2Decoder2Encoder's learned queries: (768² tiles, 1024² global view)
QUERIES = (144, 256)
#: deepseek_ocr2.py::IMAGE_SIZE (the tile; DeepSeek-OCR's is 640)
OCR2_TILE = 768


def qwen2_encoder_tensors(prefix: str = "qwen2_model") -> list[WeightTensor]:
    """deepencoder2.py::Qwen2Decoder2Encoder (module docstring): replicated, whatever the TP."""
    n, c, heads, kv_heads, m = (QWEN2_ENC[k] for k in ("layers", "width", "heads", "kv_heads", "mlp"))
    hd = c // heads
    kv = kv_heads * hd

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    layers = "model.model.layers"
    return [
        t(f"{layers}.self_attn.q_proj", c, c, n), t(f"{layers}.self_attn.q_proj.bias", c, 1, n),
        t(f"{layers}.self_attn.k_proj+v_proj", kv, c, 2 * n), t(f"{layers}.self_attn.k_proj+v_proj.bias", kv, 1, 2 * n),
        t(f"{layers}.self_attn.o_proj", c, c, n),
        t(f"{layers}.mlp.gate_proj+up_proj", m, c, 2 * n), t(f"{layers}.mlp.down_proj", c, m, n),
        t(f"{layers}.input_layernorm+post_attention_layernorm", c, 1, 2 * n),
        t("model.model.norm", c),
        WeightTensor(f"{prefix}.model.model.rotary_emb.inv_freq+original_inv_freq", "buffer", hd // 2, 1, 2,
                     dtype="float32"),
        t("query_768", QUERIES[0], c), t("query_1024", QUERIES[1], c),
    ]


def deepseek_ocr2_image_tokens(width: int, height: int) -> int:
    """DeepseekOCR2ProcessingInfo.get_num_image_tokens with cropping (module docstring)."""
    tw, th = (1, 1) if width <= OCR2_TILE and height <= OCR2_TILE else _ocr_tiles(width, height, tile=OCR2_TILE)
    h = math.ceil((OCR_BASE // 16) / 4)
    h2 = math.ceil((OCR2_TILE // 16) / 4)
    local = (th * h2) * (tw * h2) if (tw > 1 or th > 1) else 0
    return h * h + local + 1


@register
class DeepseekOCR2(DeepseekOCR):
    """DeepSeek-OCR-2: DeepSeek-OCR's decoder under DeepEncoder-V2 (SAM ViT-B + the Qwen2 encoder)."""

    architectures = ("DeepseekOCR2ForCausalLM",)
    bare_tower_parameters = ("view_seperator",)  # an nn.Parameter inside _mark_tower_model: always built

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        return QWEN2_ENC["width"], QWEN2_ENC["mlp"]

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        pc = config.raw.get("projector_config") or {}
        projector = [t for t in mlp_projector_tensors(pc) if t.name != "image_newline+view_seperator"]
        n_embed = int(pc.get("n_embed", 2048))
        return [*sam_vit_b_tensors(last_conv=QWEN2_ENC["width"]), *qwen2_encoder_tensors(), *projector,
                WeightTensor("view_seperator", "encoder", n_embed, 1)]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """The 1536² dummy (get_image_size_with_most_features with the 768 tile)."""
        return {"image": deepseek_ocr2_image_tokens(2 * OCR2_TILE, 2 * OCR2_TILE)}

    def notes(self) -> tuple[str, ...]:
        return (super().notes()[0], "vision tower: vLLM's fixed DeepEncoder-V2 (SAM ViT-B + a 24-layer Qwen2 "
                "encoder) whatever vision_config says")
