#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on DotsOCRForCausalLM (vLLM 0.33.0 model_executor/models/dots_ocr.py).

    python bench/oracle/shims_dots_ocr.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: dots.ocr checkpoints' config has ``model_type`` "dots_ocr", whose config class ships as
remote code (``configuration_dots.py::DotsOCRConfig``, loaded on a GPU host with
``--trust-remote-code``).  vLLM 0.33.0 carries its own copy of that class
(vllm/transformers_utils/configs/dotsocr.py::DotsOCRConfig / DotsVisionConfig, exported from
``vllm.transformers_utils.configs``) but does not put "dots_ocr" in its config registry,
transformers 5.20 does not know the type and the oracle does not run remote code.

What the shim does, and nothing else: it registers vLLM's own ``DotsOCRConfig`` and
``DotsVisionConfig`` with transformers' ``AutoConfig`` for "dots_ocr" / "dots_vit".  It allocates
nothing; every module, parameter, buffer and KV cache spec is built by vLLM's own code.  The
registration is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_dots_ocr.py: model_type dots_ocr (and its vision type dots_vit) "
        "registered with transformers' AutoConfig as vLLM 0.33.0's own copies of the checkpoint's remote "
        "configuration_dots.py classes (vllm/transformers_utils/configs/dotsocr.py::DotsOCRConfig, "
        "DotsVisionConfig); no tensor is created by the shim")


def register_vllm_dots_configs(_oracle: object) -> None:
    """vLLM's own DotsOCRConfig / DotsVisionConfig as transformers' AutoConfig for their types."""
    from transformers import AutoConfig
    from vllm.transformers_utils.configs.dotsocr import DotsOCRConfig, DotsVisionConfig

    for model_type, cls in (("dots_vit", DotsVisionConfig), ("dots_ocr", DotsOCRConfig)):
        AutoConfig.register(model_type, cls, exist_ok=True)


if __name__ == "__main__":
    sys.exit(shim_main(register_vllm_dots_configs, NOTE))
