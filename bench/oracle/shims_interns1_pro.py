#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on InternS1ProForConditionalGeneration (internlm/Intern-S1-Pro;
vLLM 0.33.0 model_executor/models/interns1_pro.py).

    python bench/oracle/shims_interns1_pro.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: the checkpoint's config has ``model_type`` "interns1_pro", whose config class
(``configuration_interns1_pro.py::InternS1ProConfig``, ``auto_map``) ships as remote code;
transformers 5.20 does not know the type and the oracle does not run remote code.  On a GPU host
the user passes ``--trust-remote-code`` and the remote class loads.  A ``model_type`` copy is no
stand-in: "qwen3_vl_moe" would give the vision config transformers' default
``deepstack_visual_indexes`` [8, 16, 24] (three deepstack mergers the checkpoint does not have:
the published InternS1ProVisionConfig has no such field) and drop the FoPE keys of
``rope_scaling`` that vLLM reads (interns1_pro.py::InternS1ProMoeDecoderLayer).

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` stand-ins
for "interns1_pro" / "interns1_pro_text" / "interns1_pro_vision" that keep what the published
classes keep: every key of the text and vision sub-configs as an attribute, with the published
classes' defaults for absent keys (text: decoder_sparse_step 1, mlp_only_layers [], norm_topk_prob
true, head_dim hidden_size // num_attention_heads when absent; vision: no deepstack field), and the
top-level token ids.

Second, FoPE (rotary_embedding/fope.py::FourierRotaryEmbedding._compute_inv_freq) keeps the
inverse frequencies above ``2 pi / max_position_embeddings`` with a boolean-mask index, whose
output length depends on the values: on the meta device torch refuses it (``nonzero``).  The shim
computes the same selection on the CPU in float32 (numpy: ``1 / base ** (arange(0, rotary_dim, 2)
/ rotary_dim)``, the first ``num_inv_freq`` when set, else those ``>`` the float32 threshold) and
returns a float32 tensor of that length on the model's device, as the GPU host would hold it; the
``cos_coef`` / ``sin_coef`` parameters and the ``cos_sin_cache`` buffer built from its length are
then vLLM's own.  Apart from that buffer (same shape and dtype as on a GPU host) the shim allocates
nothing; every module, parameter, buffer and KV cache spec is built by vLLM's own code.  Both
stand-ins are recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import after_emulation_setup, load_oracle, run_oracle  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_interns1_pro.py: model_type interns1_pro (and its _text / _vision "
        "sub-types) registered with transformers' AutoConfig as stand-ins for the checkpoint's remote "
        "configuration_interns1_pro.py classes: every sub-config key kept as an attribute with the published "
        "defaults for absent keys (no deepstack_visual_indexes in the vision config); FourierRotaryEmbedding."
        "_compute_inv_freq's boolean-mask selection computed on the CPU in float32 (numpy) and returned as a "
        "float32 tensor of that length (meta refuses the data-dependent index); no other tensor is created by the shim")

TEXT_DEFAULTS = {
    "vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24,
    "num_attention_heads": 16, "num_key_value_heads": 16, "hidden_act": "silu", "max_position_embeddings": 128000,
    "initializer_range": 0.02, "rms_norm_eps": 1e-6, "use_cache": True, "rope_theta": 5000000.0,
    "attention_bias": False, "attention_dropout": 0.0, "decoder_sparse_step": 1, "moe_intermediate_size": 1408,
    "num_experts_per_tok": 4, "num_experts": 60, "norm_topk_prob": True, "router_aux_loss_coef": 0.001,
    "mlp_only_layers": None, "rope_scaling": None, "head_dim": None,
}
VISION_DEFAULTS = {
    "depth": 27, "hidden_size": 1152, "hidden_act": "gelu_pytorch_tanh", "intermediate_size": 4304, "num_heads": 16,
    "in_channels": 3, "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 3584,
    "num_position_embeddings": 2304, "initializer_range": 0.02,
}


def install() -> None:
    from transformers import AutoConfig, PretrainedConfig

    class InternS1ProTextConfig(PretrainedConfig):
        model_type = "interns1_pro_text"
        base_config_key = "text_config"

        def __init__(self, tie_word_embeddings=False, **kwargs):
            own = {k: kwargs.pop(k, v) for k, v in TEXT_DEFAULTS.items()}
            if own["num_key_value_heads"] is None:
                own["num_key_value_heads"] = own["num_attention_heads"]
            own["head_dim"] = own["head_dim"] or own["hidden_size"] // own["num_attention_heads"]
            own["mlp_only_layers"] = [] if own["mlp_only_layers"] is None else own["mlp_only_layers"]
            for k, v in own.items():
                setattr(self, k, v)
            super().__init__(tie_word_embeddings=tie_word_embeddings, **kwargs)

    class InternS1ProVisionConfig(PretrainedConfig):
        model_type = "interns1_pro_vision"
        base_config_key = "vision_config"

        def __init__(self, **kwargs):
            own = {k: kwargs.pop(k, v) for k, v in VISION_DEFAULTS.items()}
            super().__init__(**kwargs)
            for k, v in own.items():
                setattr(self, k, v)

    class InternS1ProConfig(PretrainedConfig):
        model_type = "interns1_pro"
        sub_configs = {"vision_config": InternS1ProVisionConfig, "text_config": InternS1ProTextConfig}

        def __init__(self, text_config=None, vision_config=None, image_token_id=151655, video_token_id=151656,
                     vision_start_token_id=151652, vision_end_token_id=151653, tie_word_embeddings=False, **kwargs):
            self.vision_config = (InternS1ProVisionConfig(**vision_config) if isinstance(vision_config, dict)
                                  else vision_config if vision_config is not None else InternS1ProVisionConfig())
            self.text_config = (InternS1ProTextConfig(**text_config) if isinstance(text_config, dict)
                                else text_config if text_config is not None else InternS1ProTextConfig())
            self.image_token_id = image_token_id
            self.video_token_id = video_token_id
            self.vision_start_token_id = vision_start_token_id
            self.vision_end_token_id = vision_end_token_id
            super().__init__(**kwargs, tie_word_embeddings=tie_word_embeddings)

    _install_fope_inv_freq()
    AutoConfig.register("interns1_pro_text", InternS1ProTextConfig)
    AutoConfig.register("interns1_pro_vision", InternS1ProVisionConfig)
    AutoConfig.register("interns1_pro", InternS1ProConfig)


def _install_fope_inv_freq() -> None:
    import numpy as np
    import torch
    from vllm.model_executor.layers.rotary_embedding.fope import FourierRotaryEmbedding

    def _compute_inv_freq(self, base: float) -> torch.Tensor:
        exponents = np.arange(0, self.rotary_dim, 2, dtype=np.float32) / np.float32(self.rotary_dim)
        inv_freq = np.float32(1.0) / (np.float32(base) ** exponents)
        if self.num_inv_freq is not None:
            kept = min(int(self.num_inv_freq), inv_freq.shape[0])
        else:
            kept = int((inv_freq > np.float32(2.0 * np.pi / self.max_position_embeddings)).sum())
        return torch.empty(kept, dtype=torch.float32)

    FourierRotaryEmbedding._compute_inv_freq = _compute_inv_freq


def main() -> int:
    oracle_path = sys.argv[1]
    oracle = load_oracle(oracle_path)
    # after the oracle's platform emulation, with shims_pwal_meta.py's stand-ins too (the FP8 checkpoint's
    # BaseKVCacheMethod.process_weights_after_loading compares its scale placeholders on the host)
    import shims_pwal_meta

    after_emulation_setup(oracle, lambda: (install(), shims_pwal_meta.install(oracle)))
    oracle.ASSUMPTIONS.append(NOTE)
    return run_oracle(oracle, oracle_path)


if __name__ == "__main__":
    sys.exit(main())
