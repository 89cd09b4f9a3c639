"""Cosmos3 / Alpamayo 2 Super: Qwen3-VL under other names (vmemplan/models/qwen3_vl_kin.py).

Worked by hand: Alpamayo's config nests the Qwen3-VL config under ``vlm_config`` and defaults the
pixel budget to 163840..196608 (Alpamayo2SuperConfig); Cosmos3's trimmed vision config takes
transformers' Qwen3VLVisionConfig defaults (patch 16, deepstack levels [8, 16, 24])."""

from __future__ import annotations

from vmemplan.model_config import ModelConfig

TEXT = {"model_type": "qwen3_vl_text", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 1024,
        "max_position_embeddings": 4096,
        "rope_scaling": {"mrope_interleaved": True, "mrope_section": [6, 5, 5], "rope_type": "default"}}


def test_alpamayo_flattens_vlm_config_and_keeps_its_pixel_budget():
    raw = {"architectures": ["Alpamayo2Super"], "model_type": "alpamayo2_super",
           "vlm_config": {"model_type": "qwen3_vl", "image_token_id": 7, "text_config": TEXT,
                          "vision_config": {"depth": 2, "hidden_size": 64, "out_hidden_size": 128}}}
    cfg = ModelConfig.from_dict(raw)
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.raw["image_token_id"]) == (128, 2, 7)
    vc = cfg.raw["vision_config"]
    assert (vc["depth"], vc["patch_size"], vc["deepstack_visual_indexes"]) == (2, 16, [8, 16, 24])
    from vmemplan.models.qwen3_vl_kin import Alpamayo2Super

    assert Alpamayo2Super.pixel_limits(Alpamayo2Super.__new__(Alpamayo2Super), cfg) == (163840, 196608)


def test_cosmos3_trimmed_vision_config_takes_qwen3_vl_defaults():
    raw = {"architectures": ["Cosmos3ForConditionalGeneration"], "model_type": "cosmos3_omni", "text_config": TEXT,
           "vision_config": {"model_type": "qwen3_vl", "depth": 27, "out_hidden_size": 128}}
    vc = ModelConfig.from_dict(raw).raw["vision_config"]
    # 27 blocks, patch 16, merge 2, temporal 2, 2304 position embeddings, three deepstack levels
    assert (vc["depth"], vc["patch_size"], vc["spatial_merge_size"], vc["temporal_patch_size"],
            vc["num_position_embeddings"], len(vc["deepstack_visual_indexes"])) == (27, 16, 2, 2, 2304, 3)
