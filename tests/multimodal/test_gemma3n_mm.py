"""Gemma-3n with its towers (vmemplan/models/gemma3n_mm.py), on the real google/gemma-3n-E2B config.
Expected numbers are worked by hand in the comments (vLLM 0.33.0 gemma3n_mm.py, transformers'
Gemma3nAudioEncoder); the oracle fixtures google-gemma-3n-E2B.oracle-nosparsity.tp{1,2} check the whole."""

from __future__ import annotations

import json
from pathlib import Path

from tests.request._cli import run
from vmemplan.core.graph import GraphContext
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.models.gemma3n_mm import gemma3n_audio_tower

CONFIG = Path(__file__).resolve().parents[2] / "tests/fixtures/oracle/configs/google--gemma-3n-E2B.json"


def _bytes(tensors) -> int:
    return weight_bytes_per_rank(tensors, model_dtype="bfloat16", allocator_rounding=False).total_bytes


def test_audio_tower_bytes_by_hand():
    # E2B audio: hidden h = 1536, 12 Conformer blocks, 8 heads of 192, conv kernel 5.
    # Per block: 2 feed-forwards 2·(4h·h)·2 = 16h², attention pos/q/k/v/post 5h², light conv
    # linear_start 2h² + linear_end h²: 24h² = 56,623,104; 9 RMSNorms 9h = 13,824; per_dim_scale 192;
    # depthwise conv h·5 = 7,680 -> 56,644,800 parameters; × 12 = 679,737,600.
    # Sub-sampling: conv_0 128·1·3·3 = 1,152 + norm 128; conv_1 32·128·3·3 = 36,864 + norm 32;
    # frequency 128 -> (128+2-3)//2+1 = 64 -> 32, so input_proj 1536 × 32·32 = 1,572,864: 1,611,040.
    # Parameters 681,348,640 in bf16 = 1,362,697,280 B.  Buffers per block: 6 bf16 scalars (12 B),
    # fp32 softcap (4 B), fp32 inv_timescales 768 (3,072 B), bool mask 12 × (12+12+0) (288 B):
    # 3,376 × 12 = 40,512 B.  Total 1,362,737,792 B (vLLM 0.33.0 on the meta device: the same).
    ac = json.loads(CONFIG.read_text())["audio_config"]
    assert _bytes(gemma3n_audio_tower(ac)) == 1_362_697_280 + 40_512 == 1_362_737_792


def test_towers_follow_the_modality_limits():
    adapter = adapter_for(ModelConfig.from_dict(json.loads(CONFIG.read_text())))
    full = _bytes(adapter.weight_tensors(GraphContext()))
    no_audio = _bytes(adapter.weight_tensors(GraphContext(limit_mm_per_prompt=(("audio", 0),))))
    # the audio tower plus embed_audio: embedding 128 × 1536, two norms 2 × 1536, projection
    # 2048 × 1536, the weightless post norm's ones [2048]: 3,345,408 parameters = 6,690,816 B,
    # plus its ones tensor 4,096 B
    assert full - no_audio == 1_362_737_792 + 6_690_816 + 4_096


def test_language_model_only_drops_both_towers(capsys):
    def weights(*flags: str) -> int:
        r = run(["size", str(CONFIG), "--gpu", "h200", *flags, "-f", "json"], capsys)
        assert r.code == 0, r.stderr
        return int(json.loads(r.stdout)["per_rank"]["weights_bytes"])

    lm_only = weights("--language-model-only")
    assert lm_only == weights("--limit-mm-per-prompt", '{"image": 0, "audio": 0}')
    # image tower 588,253,824 B + embed_vision 8,925,184 B, audio 1,369,432,704 B (as above),
    # before the allocator's rounding: the difference is at least that
    assert weights() - lm_only >= 588_253_824 + 8_925_184 + 1_369_432_704
