"""Intern-S1-Pro's Fourier position encoding (vmemplan/models/interns1_pro.py), worked by hand.

rotary_embedding/fope.py::FourierRotaryEmbedding keeps the inverse frequencies 5e6 ** (-2i/128) above
2 pi / 262144 = 2.397e-5: i < 64 * ln(262144 / 2 pi) / ln(5e6) = 44.1, so 45 of 64.  At TP 2 a rank
holds 4 / 2 = 2 KV heads: inv_freq 45 x 4 B = 180 B, cos_coef + sin_coef 2 x (2 x 45 x 45) x 2 B =
16,200 B, cos_sin_cache 262144 x (2 x 2 x 128) x 2 B = 268,435,456 B (fope_sep_head)."""

from __future__ import annotations

from vmemplan.models.interns1_pro import fope_kept_frequencies, fope_tensors


def test_fope_keeps_45_frequencies_for_intern_s1_pro():
    assert fope_kept_frequencies(128, 5_000_000.0, 262144, None) == 45
    assert fope_kept_frequencies(128, 5_000_000.0, 262144, 16) == 16


def test_fope_tensors_at_tp2():
    ts = {t.name: t for t in fope_tensors(head_dim=128, kv_heads_rank=2, base=5_000_000.0, max_position=262144,
                                          num_inv_freq=None, sep_head=True)}
    inv, coef, cache = ts["rotary_emb.inv_freq"], ts["rotary_emb.cos_coef+sin_coef"], ts["rotary_emb.cos_sin_cache"]
    assert (inv.rows * inv.cols, inv.dtype) == (45, "float32")
    assert coef.rows * coef.cols * coef.count * 2 == 16_200
    assert cache.rows * cache.cols * 2 == 268_435_456
