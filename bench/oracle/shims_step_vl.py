#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on StepVLForConditionalGeneration (vLLM 0.33.0
model_executor/models/step_vl.py, stepfun-ai/Step3-VL-10B) and Step3p7ForConditionalGeneration
(step3p7.py, stepfun-ai/Step-3.7-Flash).

    python bench/oracle/shims_step_vl.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: both checkpoints ship their config class as remote code (``auto_map``), loaded on a GPU host
with ``--trust-remote-code``; the oracle does not run remote code.

* Step3-VL-10B's ``model_type`` "step_robotics" (``configuration_step_vl.py::StepRoboticsConfig``)
  is unknown to transformers 5.20 and to vLLM 0.33.0;
* Step-3.7-Flash's "step3p7" is known to transformers 5.20 (``Step3p7Config``), but that class
  renames the vision keys (``width`` -> ``hidden_size``, ``layers``, ``heads``) and drops the
  PerceptionEncoder switches (``use_cls_token``, ``use_abs_posemb``, ``use_ln_pre``, ...), so
  vLLM's ``PerceptionEncoder`` (step_vl.py), which reads ``config.vision_config.width`` and those
  switches, cannot be built from it; the remote class the checkpoint names keeps them.

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` stand-ins
that build what the remote classes build and vLLM reads: ``vision_config`` as vLLM's own
``PerceptionEncoderConfig`` (vllm/transformers_utils/configs/step5.py, "the vision tower shared by
Step3p7 and Step5"; its defaults are the remote ``StepRoboticsVisionEncoderConfig``'s: width 1536,
47 layers, 16 heads, MLP ratio 8960/1536, image 728, patch 14, layer scale 0.1, absolute positions,
2-D RoPE, pre-LayerNorm, no class token, no post-LayerNorm), ``text_config`` as transformers'
``Qwen3Config`` (step_robotics) or ``Step3p7TextConfig`` (step3p7, the class vLLM maps the text
type ``step3p5`` to), and ``understand_projector_stride`` / ``projector_bias`` / ``image_token_id``
as attributes.  For step3p7 the
text sub-config answers global reads of its per-layer attributes
(``allow_global_per_layer_attribute_access``): transformers 5.20's Step3p7TextConfig is a
heterogeneous config (``per_layer_config`` for the sliding layers' head count), which raises on
``hasattr(text_config, "num_attention_heads")`` in vLLM's ``get_hf_text_config`` for a nested text
config (a top-level step3p5 config skips that check); the remote classes predate that mechanism and
answer with the global value, the full-attention head count.  vLLM's step3p5.py reads the heads of
each layer through ``num_sliding_attention_heads`` / ``per_layer_config`` either way.  It allocates
nothing; every module, parameter, buffer and KV cache spec is built by vLLM's own code.  The stand-in is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_step_vl.py: model_types step_robotics and step3p7 registered with "
        "transformers' AutoConfig as stand-ins for the checkpoints' remote configuration_step_vl.py::"
        "StepRoboticsConfig and configuration_step3p7.py::Step3p7Config: vision_config as vLLM's "
        "PerceptionEncoderConfig (width / layers / heads and the PerceptionEncoder switches kept), "
        "text_config as Qwen3Config (step_robotics) or Step3p7TextConfig (step3p7, with global reads of "
        "its per-layer attributes allowed, as a remote pre-heterogeneity config answers them), "
        "understand_projector_stride, projector_bias and image_token_id as attributes; no tensor is "
        "created by the shim")


def register_step_vl_standins(_oracle: object) -> None:
    """Stand-in StepRoboticsConfig / Step3p7Config (the remote classes' sub-configs) as AutoConfig."""
    from transformers import AutoConfig, PretrainedConfig, Qwen3Config
    from transformers.models.step3p7.configuration_step3p7 import Step3p7TextConfig
    from vllm.transformers_utils.configs.step5 import PerceptionEncoderConfig

    def sub(value: object, cls: type) -> object:
        if isinstance(value, PretrainedConfig):
            return value
        kw = {k: v for k, v in dict(value or {}).items() if k != "model_type"}  # type: ignore[call-overload]
        return cls(**kw)

    def standin(model_type: str, text_cls: type, token: int, global_reads: bool = False) -> type:
        class StepVLStandinConfig(PretrainedConfig):
            def __init__(self, vision_config=None, text_config=None, understand_projector_stride=2,
                         projector_bias=False, image_token_id=token, **kw):
                self.vision_config = sub(vision_config, PerceptionEncoderConfig)
                self.text_config = sub(text_config, text_cls)
                if global_reads:  # as a remote (pre-heterogeneity) text config answers them
                    self.text_config.allow_global_per_layer_attribute_access = True
                self.understand_projector_stride = understand_projector_stride
                self.projector_bias = projector_bias
                self.image_token_id = image_token_id
                self.hidden_size = self.text_config.hidden_size
                super().__init__(**kw)

        StepVLStandinConfig.model_type = model_type
        return StepVLStandinConfig

    AutoConfig.register("step_robotics", standin("step_robotics", Qwen3Config, 151679), exist_ok=True)
    AutoConfig.register("step3p7", standin("step3p7", Step3p7TextConfig, 128001, True), exist_ok=True)


if __name__ == "__main__":
    sys.exit(shim_main(register_step_vl_standins, NOTE))
