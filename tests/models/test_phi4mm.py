"""Phi4MMForCausalLM (vLLM 0.33.0 phi4mm.py, phi4mm_audio.py, phi4mm_utils.py): the Conformer
speech encoder worked by hand, and which tower each modality limit builds."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.models.phi4mm import phi4mm_audio_encoder

AUDIO = {"attention_dim": 8, "attention_heads": 2, "linear_units": 6, "num_blocks": 1, "input_size": 16,
         "kernel_size": 3, "ext_pw_out_channel": 8, "ext_pw_kernel_size": 1, "depthwise_seperable_out_channel": 8,
         "depthwise_multiplier": 1, "bias_in_glu": True, "batch_norm": False, "input_layer": "nemo_conv",
         "nemo_conv_settings": {"conv_channels": 4}, "time_reduction": 4,
         "relative_attention_bias_args": {"t5_bias_max_distance": 10, "type": "t5"}}
CFG = {"architectures": ["Phi4MMForCausalLM"], "model_type": "phi4mm", "hidden_size": 16, "intermediate_size": 32,
       "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 1000,
       "max_position_embeddings": 1024, "tie_word_embeddings": True,
       "audio_processor": {"name": "cascades", "config": AUDIO},
       "embd_layer": {"audio_embd_layer": {"projection_cls": "mlp", "downsample_rate": 1, "compression_rate": 8},
                      "image_embd_layer": {"projection_cls": "mlp"}}}


def test_conformer_audio_encoder_by_hand() -> None:
    ts = phi4mm_audio_encoder(ModelConfig.from_dict(CFG))
    enc = sum(t.rows * t.cols * t.count for t in ts if t.kind == "encoder")
    buf = sum(t.rows * t.cols * t.count for t in ts if t.kind == "buffer")
    # subsampling (factor 4 = 2 stages, C = 4): Conv2d(1→4, 3×3) and a depthwise 3×3: 2·36, a pointwise 4·4,
    # 3 biases of 4; the mel axis 16 → 8 → 4, so out = Linear(4·4 → 8) + bias: 72 + 16 + 12 + 128 + 8
    embed = 236
    # T5 bias table 2·10 × 2 heads; global mean / invstd 2 · 16
    misc = 40 + 32
    # one block: 4 FeedForward LayerNorm vectors 32, GLULinear 2·(12·8 + 12), Linear 2·(8·6 + 8), q/k/v/out 4·(64 + 8),
    # conv LayerNorm 16, depthwise 8·3 + 8, pointwise 64 + 8, GLU conv 16·8 + 16, b1/b2 16, ext conv 64 + 8,
    # the two block LayerNorms 32
    block = 32 + 216 + 112 + 288 + 16 + 32 + 72 + 144 + 16 + 72 + 32
    # audio_projection and audio_projection_for_vision: 2 · (16·8 + 16 + 16·16 + 16)
    proj = 832
    assert enc == embed + misc + block + proj == 2_172
    # the 5000-row positional table (on the GPU, built at construction) and the dev_type scalar
    assert buf == 5000 * 8 + 1


def test_modality_limits_pick_the_towers() -> None:
    a = adapter_for(ModelConfig.from_dict(CFG))

    def names(**ctx: object) -> set[str]:
        return {t.name.split(".")[0] for t in a.weight_tensors(GraphContext(**ctx)) if t.kind in ("encoder", "buffer")}

    assert {"vision_encoder", "embed_tokens_extend"} <= names()
    assert "embed_tokens_extend" not in names(limit_mm_per_prompt=(("audio", 0),))
    assert "vision_encoder" not in names(limit_mm_per_prompt=(("image", 0), ("video", 0)))
    # the largest image: 16² global + 1 separator + 16·16·36 HD + 16·36 newlines + 16 global newlines
    assert a.max_tokens_per_item(a.config, GraphContext())["image"] == 256 + 1 + 9_216 + 576 + 16
    # the 241,000-sample dummy clip: 1,504 frames over compression 8 = 188 tokens
    assert a.max_tokens_per_item(a.config, GraphContext())["audio"] == 188
