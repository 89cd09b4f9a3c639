"""Worked examples for vmemplan/models/audio_towers.py (figures computed by hand)."""

from vmemplan.models.audio_towers import qwen2_audio_encoder, qwen3_omni_audio_encoder, whisper_output_tokens


def _elements(tensors) -> int:
    return sum(t.elements for t in tensors)


def test_qwen2_audio_encoder_defaults() -> None:
    # d 1280, 32 layers, ffn 5120, 128 mel bins, 1500 positions (Qwen2AudioEncoderConfig defaults):
    # conv1 1280*128*3 + conv2 1280*1280*3 + 2 biases of 1280
    convs = 491_520 + 4_915_200 + 2_560
    # per layer: q, k, v, out 4*1280^2; q/v/out biases 3*1280; two LayerNorms 4*1280;
    # fc1 5120*1280 + 5120; fc2 1280*5120 + 1280
    layer = 6_553_600 + 3_840 + 5_120 + 6_553_600 + 5_120 + 6_553_600 + 1_280
    # embed_positions 1500*1280, final LayerNorm 2*1280
    assert _elements(qwen2_audio_encoder({})) == convs + 32 * layer + 1_920_000 + 2_560 == 636_968_960


def test_qwen3_omni_audio_encoder_splits_layers_when_tp_divides_heads() -> None:
    ac = {"d_model": 64, "encoder_layers": 2, "encoder_attention_heads": 4, "encoder_ffn_dim": 128,
          "num_mel_bins": 16, "max_source_positions": 10, "downsample_hidden_size": 8, "output_dim": 32}
    # per layer at TP t: qkv 3*64*64/t + 3*64/t, out 64*64/t + 64, norms 4*64, fc1 128*64/t + 128/t, fc2 64*128/t + 64
    def layer(t: int) -> int:
        return (12_288 + 192) // t + 4_096 // t + 64 + 256 + (8_192 + 128) // t + 8_192 // t + 64
    # convs 8*9 + 2*8*8*9 + 3*8; conv_out 64 * 8*2 (16 mel -> 8 -> 4 -> 2); ln_post 128; proj1 64*64+64; proj2 32*64+32
    fixed = 72 + 1_152 + 24 + 1_024 + 128 + 4_160 + 2_080
    tensors = qwen3_omni_audio_encoder(ac, 2)
    assert _elements([t for t in tensors if t.dtype is None]) == fixed + 2 * layer(2)
    assert _elements(qwen3_omni_audio_encoder(ac, 8)) - 640 == fixed + 2 * layer(1)  # 8 does not divide 4 heads
    pos = [t for t in tensors if t.dtype == "float32"]
    assert [(t.rows, t.cols) for t in pos] == [(10, 64)]


def test_whisper_output_tokens() -> None:
    assert whisper_output_tokens(3000) == 750  # 30 s at hop 160: 3000 frames -> 1500 -> 750


def test_qwen3_audio_tokens() -> None:
    from vmemplan.models.qwen_audio import qwen3_audio_tokens

    assert qwen3_audio_tokens(3000) == 390  # 30 windows of 100 frames, 13 tokens each
    assert qwen3_audio_tokens(150) == 13 + 7  # 50 leftover frames: 25 -> 13 -> 7
