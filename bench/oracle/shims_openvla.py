#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on OpenVLAForActionPrediction (vLLM 0.33.0
vllm/model_executor/models/openvla.py).

    python bench/oracle/shims_openvla.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

Why: OpenVLA's PrismaticVisionBackbone builds its two featurizers with ``timm.create_model``
(``vit_large_patch14_reg4_dinov2.lvd142m`` and ``vit_so400m_patch14_siglip_224``, ``pretrained=False``);
timm is not in the oracle's venv.

What the shim does, and nothing else: when ``ORACLE_TIMM_PATH`` names a directory, it is put first
on ``sys.path`` (``pip install --no-deps --target DIR timm==1.0.31``; the fixtures were made with
1.0.31), and the timm version is recorded in the fixture's ``assumptions``.  vLLM's own code then
builds every tensor; no figure is changed by the shim.
"""

from __future__ import annotations

import sys

from _shim import shim_main, timm_from_env  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_openvla.py: timm {timm} from ORACLE_TIMM_PATH builds OpenVLA's DINOv2 + SigLIP "
        "featurizers through vLLM's own PrismaticVisionBackbone; nothing else is changed")


if __name__ == "__main__":
    sys.exit(shim_main(lambda _oracle: None, NOTE.format(timm=timm_from_env())))
