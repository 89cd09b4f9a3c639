"""Phi-4-multimodal (``Phi4MMForCausalLM``): a SigLIP/Idefics2 image encoder and a Conformer
speech encoder in front of a Llama-graph decoder (the Phi-3 dimensions of the config).

vllm/model_executor/models/phi4mm.py::Phi4MMForCausalLM (0.33.0): ``vision_encoder``
(Phi4MMImageEncoder, built when images are allowed), ``embed_tokens_extend`` (phi4mm_audio.py::
AudioEmbedding, built when audio is allowed), ``model`` = llama.py::LlamaModel on the top-level
config and a ParallelLMHead tied to the embedding under ``tie_word_embeddings``.  No pipeline
parallelism (the model asserts PP 1).  The vision and speech LoRA adapters of the checkpoint are
not part of the base weights (the weight mapper drops ``lora``); serving them is ``--enable-lora``.
``Phi4MultimodalForCausalLM`` (the transformers format) left vLLM in 0.12.0.

Remote code: checked with ``bench/oracle/remote_code_standins.py phi4mm`` (weights and KV pool exact
at TP 1 and 2 on the transcribed Phi-4-multimodal-instruct config).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError, UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.dense import Llama
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import siglip_tower

__all__ = ["Phi4MM", "phi4mm_audio_encoder", "phi4mm_image_encoder"]

#: phi4mm.py::get_navit_vision_model: the SigLIP shape is hard-coded, not read from the config
NAVIT = {"hidden_size": 1152, "image_size": 448, "intermediate_size": 4304, "num_attention_heads": 16,
         "num_hidden_layers": 27, "patch_size": 14, "num_channels": 3}
#: phi4mm_utils.py::AbsolutePositionalEncoding default max_len
POS_ROWS = 5000
#: dummy audio length of the profile (phi4mm.py::_AUDIO_MAX_SOUNDFILE_SIZE), 16 kHz samples
AUDIO_MAX_SAMPLES = 241_000


def _audio_config(config: Any) -> Mapping[str, Any]:
    ap = config.raw.get("audio_processor")
    if not isinstance(ap, Mapping) or ap.get("name") != "cascades" or not isinstance(ap.get("config"), Mapping):
        raise ModelConfigError("Phi4MMForCausalLM: config.json lacks audio_processor {name: cascades, config: {...}}",
                               hint="vLLM's AudioEmbedding supports only the cascades Conformer")
    return ap["config"]


def _embd(config: Any, key: str) -> Mapping[str, Any]:
    el = config.raw.get("embd_layer")
    sub = el.get(key) if isinstance(el, Mapping) else None
    return sub if isinstance(sub, Mapping) else {}


def _mlp2(prefix: str, d_in: int, h: int) -> list[WeightTensor]:
    """Linear(d_in → h) → GELU → Linear(h → h), biased, replicated (``projection_cls: mlp``)."""
    return [WeightTensor(f"{prefix}.0", "encoder", h, d_in), WeightTensor(f"{prefix}.0.bias", "encoder", h, 1),
            WeightTensor(f"{prefix}.2", "encoder", h, h), WeightTensor(f"{prefix}.2.bias", "encoder", h, 1)]


def phi4mm_image_encoder(config: Any, tp: int) -> list[WeightTensor]:
    """phi4mm.py::Phi4MMImageEncoder: the Idefics2 tower of :data:`NAVIT` up to
    ``img_processor.layer_idx`` (default -2: 26 of 27 layers), no post-LayerNorm, split over TP;
    the HD-transform separators ``glb_GN``/``sub_GN`` [1152]; ``img_projection`` (mlp, 2 layers)."""
    ip = config.raw.get("img_processor")
    layer_idx = int(ip.get("layer_idx", -2)) if isinstance(ip, Mapping) else -2
    total = NAVIT["num_hidden_layers"]
    layers = total + layer_idx + 1 if layer_idx < 0 else layer_idx + 1
    tower = siglip_tower(NAVIT, tp, layers, post_norm=False)
    tower = [WeightTensor(t.name.replace("vision_tower.vision_model.", "vision_encoder.img_processor."), t.kind,
                          t.rows, t.cols, t.count) for t in tower]
    c, h = NAVIT["hidden_size"], config.hidden_size
    out = tower + [WeightTensor("vision_encoder.glb_GN+sub_GN", "encoder", c, 1, 2)]
    proj = str(_embd(config, "image_embd_layer").get("projection_cls", "mlp"))
    if proj == "linear":
        return out + [WeightTensor("vision_encoder.img_projection", "encoder", h, c),
                      WeightTensor("vision_encoder.img_projection.bias", "encoder", h, 1)]
    return out + _mlp2("vision_encoder.img_projection", c, h)


def phi4mm_audio_encoder(config: Any) -> list[WeightTensor]:
    """phi4mm_audio.py::AudioEmbedding with its ConformerEncoder (``nemo_conv`` input layer, T5
    relative bias), all ``nn`` modules, replicated on every rank:

    * ``embed`` (phi4mm_utils.py::NemoConvSubsampling, ``dw_striding``, factor ``time_reduction``):
      Conv2d(1 → C, 3×3), then per further stage a depthwise Conv2d(C, 3×3) and a pointwise
      Conv2d(C → C), all biased, and ``out`` Linear(C · input_size / factor → d) + bias;
    * ``pos_emb.pe`` [5000, d] (a plain attribute made on the model's device at construction);
    * ``relative_attention_bias_layer.bias_values`` Embedding(2 · max_distance, heads);
    * ``encoder_embedding`` global_mean / global_invstd [input_size]; the ``dev_type`` scalar buffer;
    * per block: two FeedForwards [LayerNorm, GLULinear(d → 2u) + bias, Linear(u → d) + bias];
      attention linear_q/k/v/out (d × d, bias); the ConvModule [LayerNorm, GLUPointWiseConv
      Conv1d(d → 2e, k_ext) + bias and b1/b2 [e] under ``bias_in_glu``, depthwise Conv1d(d → d·m, k,
      groups d) + bias, pointwise Conv1d(d·m → s) + bias, ``ln2`` Linear(s → d) when s ≠ d, the
      extension Conv1d(d → e, k_ext) + bias, BatchNorm1d(d) under ``batch_norm``]; two LayerNorms;
    * ``audio_projection`` and ``audio_projection_for_vision`` (mlp) or one linear projection."""
    ac = _audio_config(config)
    d = int(ac["attention_dim"])
    heads = int(ac["attention_heads"])
    units = int(ac["linear_units"])
    blocks = int(ac["num_blocks"])
    n_mels = int(ac["input_size"])
    k = int(ac.get("kernel_size", 3))
    e = int(ac.get("ext_pw_out_channel", 0))
    k_ext = int(ac.get("ext_pw_kernel_size", 1))
    s = int(ac.get("depthwise_seperable_out_channel", 256))
    m = int(ac.get("depthwise_multiplier", 1))
    group = int(ac.get("attention_group_size", 1))
    if str(ac.get("input_layer", "nemo_conv")) != "nemo_conv":
        raise ModelConfigError(f"Phi4MM audio input_layer {ac.get('input_layer')!r} is not planned",
                               hint="vLLM's ConformerEncoder takes nemo_conv")
    nemo = ac.get("nemo_conv_settings") if isinstance(ac.get("nemo_conv_settings"), Mapping) else {}
    conv_c = int(nemo.get("conv_channels", 256))
    factor = int(ac.get("time_reduction", 4))
    stages = max(factor.bit_length() - 1, 1)  # log2 of the subsampling factor
    length = n_mels
    for _ in range(stages):  # calc_length: kernel 3, stride 2, padding 1
        length = (length + 2 - 3) // 2 + 1
    rel = ac.get("relative_attention_bias_args") if isinstance(ac.get("relative_attention_bias_args"), Mapping) else {}
    max_dist = int(rel.get("t5_bias_max_distance", 1000))
    sym = bool(rel.get("t5_bias_symmetric", False))
    kv = d // group if group > 1 else d

    def t(name: str, rows: int, cols: int = 1, count: int = 1, kind: str = "encoder") -> WeightTensor:
        return WeightTensor(f"embed_tokens_extend.encoder.{name}", kind, rows, cols, count)

    n = blocks
    out = [
        t("embed.conv.first+depthwise", conv_c, 9, stages),  # [C, 1, 3, 3]
        t("embed.conv.pointwise", conv_c, conv_c, stages - 1),
        t("embed.conv.bias", conv_c, 1, 2 * stages - 1),
        t("embed.out", d, conv_c * length), t("embed.out.bias", d),
        t("pos_emb.pe", POS_ROWS, d, kind="buffer"),
        t("relative_attention_bias_layer.bias_values", max_dist * (1 if sym else 2), heads // group),
        t("encoder_embedding.global_mean+global_invstd", n_mels, 1, 2),
        t("dev_type", 1, kind="buffer"),
        t("encoders.feed_forward_in+out.layer_norm", d, 1, 4 * n),
        t("encoders.feed_forward_in+out.net.0.linear", 2 * units, d, 2 * n),
        t("encoders.feed_forward_in+out.net.0.linear.bias", 2 * units, 1, 2 * n),
        t("encoders.feed_forward_in+out.net.2", d, units, 2 * n),
        t("encoders.feed_forward_in+out.net.2.bias", d, 1, 2 * n),
        t("encoders.self_attn.linear_q+linear_out", d, d, 2 * n), t("encoders.self_attn.linear_q+linear_out.bias", d, 1, 2 * n),
        t("encoders.self_attn.linear_k+linear_v", kv, d, 2 * n), t("encoders.self_attn.linear_k+linear_v.bias", kv, 1, 2 * n),
        t("encoders.conv.layer_norm", d, 1, 2 * n),
        t("encoders.conv.dw_sep_conv_1d.dw_conv", d * m, k, n), t("encoders.conv.dw_sep_conv_1d.dw_conv.bias", d * m, 1, n),
    ]
    if s:
        out += [t("encoders.conv.dw_sep_conv_1d.pw_conv", s, d * m, n), t("encoders.conv.dw_sep_conv_1d.pw_conv.bias", s, 1, n)]
    if (s and s != d) or (not s and m != 1):
        width = s if s else d * m
        out += [t("encoders.conv.ln2", d, width, n), t("encoders.conv.ln2.bias", d, 1, n)]
    if e:
        if bool(ac.get("linear_glu_in_convm", False)):
            out += [t("encoders.conv.glu.linear", 2 * e, d, n), t("encoders.conv.glu.linear.bias", 2 * e, 1, n)]
        else:
            out += [t("encoders.conv.glu.ext_pw_conv_1d", 2 * e, d * k_ext, n),
                    t("encoders.conv.glu.ext_pw_conv_1d.bias", 2 * e, 1, n)]
            if bool(ac.get("bias_in_glu", True)):
                out.append(t("encoders.conv.glu.b1+b2", e, 1, 2 * n))
        out += [t("encoders.conv.ext_pw_conv_1d", e, d * k_ext, n), t("encoders.conv.ext_pw_conv_1d.bias", e, 1, n)]
    if bool(ac.get("batch_norm", False)):
        out += [t("encoders.conv.bn_layer", d, 1, 2 * n),
                t("encoders.conv.bn_layer.running_mean+var", d, 1, 2 * n, kind="buffer"),
                t("encoders.conv.bn_layer.num_batches_tracked", 1, 1, n, kind="buffer")]
    out.append(t("encoders.layer_norm_att+layer_norm", d, 1, 4 * n))
    emb = _embd(config, "audio_embd_layer")
    h = config.hidden_size
    if str(emb.get("projection_cls", "linear")) == "mlp":
        if emb.get("use_qformer") or emb.get("use_conv_downsample"):
            raise ModelConfigError("Phi4MM audio qformer / conv downsample is not planned",
                                   hint="the released checkpoint uses neither")
        rate = int(emb.get("downsample_rate", 1))
        out += _mlp2("embed_tokens_extend.audio_projection", d * rate, h)
        out += _mlp2("embed_tokens_extend.audio_projection_for_vision", d * rate, h)
    else:
        out += [WeightTensor("embed_tokens_extend.audio_projection", "encoder", h, d),
                WeightTensor("embed_tokens_extend.audio_projection.bias", "encoder", h, 1)]
    return out


@register
class Phi4MM(VisionEncoderMixin, Llama):
    """Phi-4-multimodal: LlamaModel + tied head + the image and speech encoders."""

    architectures = ("Phi4MMForCausalLM",)
    modalities = ("image", "audio")
    patches_per_token = 4  # the 2 × 2 average pool of the 32 × 32 feature map

    def _image_on(self, ctx: GraphContext) -> bool:
        return mm_law.limit_for(ctx.limit_mm_per_prompt, "image") > 0 or \
            mm_law.limit_for(ctx.limit_mm_per_prompt, "video") > 0

    def _audio_on(self, ctx: GraphContext) -> bool:
        return mm_law.limit_for(ctx.limit_mm_per_prompt, "audio") > 0

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        return NAVIT["hidden_size"], NAVIT["intermediate_size"]

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        out = phi4mm_image_encoder(config, ctx.tensor_parallel_size) if self._image_on(ctx) else []
        return out + (phi4mm_audio_encoder(config) if self._audio_on(ctx) else [])

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """Image: the ``448 × 448·dynamic_hd`` image (Phi4MMProcessingInfo.get_image_size_with_most_features,
        ``dynamic_hd`` 36 unless the config sets it), cropped 1 × dynamic_hd: global 16² + separator +
        HD patches (16 · 16·hd) + HD newlines (16·hd) + global newlines 16
        (``_compute_num_image_tokens``).  Audio: the 241,000-sample dummy clip, 1,504 frames of 10 ms
        over ``compression_rate`` (``_compute_audio_embed_size``)."""
        out: dict[str, int] = {}
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") > 0:
            hd = int(config.raw.get("dynamic_hd", 36))
            side = NAVIT["image_size"] // NAVIT["patch_size"] // 2
            out["image"] = side * side + 1 + side * side * hd + side * hd + side
        if self._audio_on(ctx):
            frames = (AUDIO_MAX_SAMPLES - 400) // 160 + 1
            rate = int(_embd(config, "audio_embd_layer").get("compression_rate", 8))
            out["audio"] = -(-frames // rate)
        return out

    def validate_parallel(self, ctx: GraphContext) -> None:
        if ctx.pipeline_parallel_size > 1:
            raise UsageError("Phi4MMForCausalLM does not support pipeline parallelism (vLLM asserts PP 1)",
                             hint="use --pipeline-parallel-size 1")
        super().validate_parallel(ctx)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)

    def tower_built(self, ctx: GraphContext) -> bool:
        return self._image_on(ctx) or self._audio_on(ctx)

    def notes(self) -> tuple[str, ...]:
        return super().notes() + ("Phi-4-multimodal's vision and speech LoRA adapters are not in the base weights; "
                                  "serving them (--enable-lora, max rank 320) adds LoRA buffers",)
