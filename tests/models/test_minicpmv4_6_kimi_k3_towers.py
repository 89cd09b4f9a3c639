"""Worked examples for the MiniCPM-V 4.6 and Kimi-K3 vision towers (element counts by hand)."""

from __future__ import annotations

from vmemplan.models.kimi_k3 import kimi_k3_tower, kimi_k3_vision
from vmemplan.models.minicpmv4_6 import minicpmv4_6_tower


def _elements(tensors) -> int:
    return sum(t.elements for t in tensors)


def test_minicpmv4_6_tower_tp2_by_hand() -> None:
    # e 8, 2 heads, MLP 16, 2 layers, patch 2 over a 4-px image (4 positions), text hidden 6, TP 2
    vc = {"hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 16, "num_hidden_layers": 2,
          "patch_size": 2, "image_size": 4}
    vpm = (8 * 3 * 2 * 2 + 8) + 4 * 8 + 2 * (4 * 8 + (12 * 8 + 12) + (8 * 4 + 8) + (8 * 8 + 8) + (8 * 8 + 8)) + 2 * 8
    # (patch conv + bias) + positions + per layer: 2 LayerNorms, qkv [12,8]+b, out [8,4]+b, fc1 [8,8]+b, fc2 [8,8]+b
    vit_merger = (12 * 8 + 12) + (8 * 4 + 8) + 2 * 8 + 2 * 32 + (64 * 32 + 64) + (8 * 64 + 8)
    merger = 2 * 32 + (32 * 32 + 32) + (6 * 32 + 6)
    assert _elements(minicpmv4_6_tower(vc, 6, tp=2, drop_last=False)) == vpm + vit_merger + merger
    assert _elements(minicpmv4_6_tower(vc, 6, tp=2, drop_last=True)) == vpm + vit_merger + merger - (
        4 * 8 + (12 * 8 + 12) + (8 * 4 + 8) + (8 * 8 + 8) + (8 * 8 + 8))


def test_kimi_k3_tower_defaults_tp1_by_hand() -> None:
    # KimiK3VisionConfig defaults: c 1024, 27 layers, qkv 1536, MLP 4096, patch 14, RMSNorm, no biases
    c, n, qkv, mlp, m, text = 1024, 27, 1536, 4096, 4096, 2304
    per_layer = 2 * c + 3 * qkv * c + c * qkv + mlp * c + c * mlp
    expected = (c * 3 * 14 * 14 + 64 * 64 * c + 4 * c + n * per_layer + c
                + m * m + text * m + text)
    assert _elements(kimi_k3_tower(kimi_k3_vision({}), 1, text)) == expected
