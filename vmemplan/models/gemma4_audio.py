"""The Gemma-4 audio tower (E-series ``Gemma4ForConditionalGeneration`` with an ``audio_config``).

vllm/model_executor/models/gemma4_mm.py::Gemma4ForConditionalGeneration.__init__ (0.33.0), under
``_mark_tower_model(vllm_config, "audio")``, builds ``AutoModel.from_config(config.audio_config)``
(transformers 5.x modeling_gemma4.py::Gemma4AudioModel), calls ``post_init()`` for its buffers,
then ``recursive_replace_linear(..., "replicate")`` (vllm/model_executor/models/transformers/utils.py)
turns every ``nn.Linear`` into a ReplicatedLinear: no tensor-parallel split, every rank holds all
of it.  ``embed_audio`` is a Gemma4MultimodalEmbedder: a ReplicatedLinear ``output_proj_dims →
text hidden`` and ``embedding_pre_projection_norm = RMSNorm(output_proj_dims, has_weight=False)``,
whose ``torch.ones`` stays a plain device tensor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws.multimodal import limit_for

__all__ = ["gemma4_audio_tensors", "gemma4_mm_extras", "gemma4_ple_buffer"]


def _cfg_int(cfg: Mapping[str, Any], key: str, default: int) -> int:
    value = cfg.get(key)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def gemma4_audio_tensors(raw: Mapping[str, Any], text_hidden: int, ctx: GraphContext) -> list[WeightTensor]:
    """Gemma4AudioModel and ``embed_audio`` as one rank holds them (defaults: Gemma4AudioConfig).

    Per transformers' modeling_gemma4.py: Gemma4AudioSubSampleConvProjection (two bias-free 3x3
    Conv2d with a bias-free LayerNorm each, then ``input_proj_linear``), the
    Gemma4AudioRelPositionalEncoding ``inv_timescales`` buffer (hidden / 2), per Gemma4AudioLayer
    two feed-forwards (``h → 4h → h`` and two RMSNorms each), the chunked attention (q/k/v/post
    clippable linears, ``relative_k_proj``, ``per_dim_scale`` of head_dim, a ``softcap`` scalar
    buffer), the light conv (``linear_start`` ``h → 2h``, ``linear_end``, a depthwise
    ``h × 1 × conv_kernel_size`` Conv1d, two RMSNorms) and three RMSNorms; with
    ``use_clipped_linears`` four scalar bounds per clippable linear (10 per layer); and
    ``output_proj`` ``h → output_proj_dims`` with bias.  Empty without an ``audio_config`` or
    when ``--limit-mm-per-prompt`` gives audio 0.
    """
    ac = raw.get("audio_config")
    if not isinstance(ac, Mapping) or limit_for(ctx.limit_mm_per_prompt, "audio") == 0:
        return []
    h = _cfg_int(ac, "hidden_size", 1024)
    layers = _cfg_int(ac, "num_hidden_layers", 12)
    heads = _cfg_int(ac, "num_attention_heads", 8)
    kernel = _cfg_int(ac, "conv_kernel_size", 5)
    out_dim = _cfg_int(ac, "output_proj_dims", 1536)
    channels = ac.get("subsampling_conv_channels") or [128, 32]
    c0, c1 = int(channels[0]), int(channels[1])
    n = layers
    out = [
        WeightTensor("audio_tower.subsample_conv_projection.layer0.conv", "encoder", c0, 9),
        WeightTensor("audio_tower.subsample_conv_projection.layer0.norm", "encoder", c0, 1),
        WeightTensor("audio_tower.subsample_conv_projection.layer1.conv", "encoder", c1, c0 * 9),
        WeightTensor("audio_tower.subsample_conv_projection.layer1.norm", "encoder", c1, 1),
        WeightTensor("audio_tower.subsample_conv_projection.input_proj_linear", "encoder", h, (c0 // 4) * c1),
        WeightTensor("audio_tower.rel_pos_enc.inv_timescales", "buffer", h // 2, 1),
        WeightTensor("audio_tower.layers.feed_forward{1,2}.ffw_layer_1", "encoder", 4 * h, h, 2 * n),
        WeightTensor("audio_tower.layers.feed_forward{1,2}.ffw_layer_2", "encoder", h, 4 * h, 2 * n),
        WeightTensor("audio_tower.layers.self_attn.q/k/v/post+relative_k_proj", "encoder", h, h, 5 * n),
        WeightTensor("audio_tower.layers.self_attn.per_dim_scale", "encoder", h // heads, 1, n),
        WeightTensor("audio_tower.layers.self_attn.softcap", "buffer", 1, 1, n),
        WeightTensor("audio_tower.layers.lconv1d.linear_start", "encoder", 2 * h, h, n),
        WeightTensor("audio_tower.layers.lconv1d.linear_end", "encoder", h, h, n),
        WeightTensor("audio_tower.layers.lconv1d.depthwise_conv1d", "encoder", h, kernel, n),
        # 2 per feed-forward (x2), 2 in the light conv, 3 in the layer
        WeightTensor("audio_tower.layers.9 RMSNorms", "encoder", h, 1, 9 * n),
        WeightTensor("audio_tower.output_proj.weight", "encoder", out_dim, h),
        WeightTensor("audio_tower.output_proj.bias", "encoder", out_dim, 1),
        WeightTensor("embed_audio.embedding_projection", "linear", text_hidden, out_dim, 1, True,
                     in_features_full=out_dim),
        WeightTensor("embed_audio.embedding_pre_projection_norm(ones, not a parameter)", "buffer", out_dim, 1),
    ]
    if ac.get("use_clipped_linears", True):
        # Gemma4ClippableLinear's torch.tensor(±inf) bounds, in the default (model) dtype
        out.append(WeightTensor("audio_tower clipping bounds", "buffer", 1, 1, 4 * 10 * n))
    return out


def gemma4_mm_extras(raw: Mapping[str, Any], text_hidden: int, ctx: GraphContext) -> list[WeightTensor]:
    """What ``Gemma4ForConditionalGeneration`` adds besides the text model and the vision tower:
    the audio tower (:func:`gemma4_audio_tensors`) and, for E-series text configs
    (``hidden_size_per_layer_input`` > 0), the PLE buffer gemma4_mm.py pre-allocates under
    ``_mark_language_model`` for CUDA graphs: ``torch.zeros(max_num_batched_tokens,
    num_hidden_layers, hidden_size_per_layer_input)`` in the model dtype, on every TP rank (kept
    with ``--language-model-only``).  Nothing for a flat (``Gemma4ForCausalLM``) config.
    """
    text = raw.get("text_config")
    if not isinstance(text, Mapping):
        return []
    return gemma4_audio_tensors(raw, text_hidden, ctx) + gemma4_ple_buffer(text, ctx)


def gemma4_ple_buffer(text: Mapping[str, Any], ctx: GraphContext) -> list[WeightTensor]:
    """The PLE buffer ``[max_num_batched_tokens, num_hidden_layers · hidden_size_per_layer_input]``
    (model dtype, every TP rank) when ``hidden_size_per_layer_input`` > 0, else nothing."""
    ple = _cfg_int(text, "hidden_size_per_layer_input", 0)
    if ple <= 0:
        return []
    return [WeightTensor("per_layer_embeddings (CUDA-graph PLE buffer)", "buffer",
                         ctx.max_num_batched_tokens, _cfg_int(text, "num_hidden_layers", 30) * ple)]
