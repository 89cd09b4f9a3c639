#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on Gemma3nForConditionalGeneration (vLLM 0.33.0
vllm/model_executor/models/gemma3n_mm.py).

    python bench/oracle/shims_gemma3n.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in its
``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: Gemma-3n's vision tower is ``AutoModel.from_config(config.vision_config)``, transformers'
TimmWrapperModel, which builds ``timm.create_model("mobilenetv5_300m_enc")``; timm is not in the
oracle's venv.

What the shim does, and nothing else: when ``ORACLE_TIMM_PATH`` names a directory, it is put first
on ``sys.path`` (install timm there with ``pip install --no-deps --target DIR timm==1.0.31``; the
fixtures were made with 1.0.31), and the timm version is recorded in the fixture's ``assumptions``.
vLLM's and transformers' own code then build every tensor; no figure is changed by the shim.
"""

from __future__ import annotations

import sys

from _shim import load_oracle, run_oracle, timm_from_env  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_gemma3n.py: timm {timm} from ORACLE_TIMM_PATH builds Gemma-3n's MobileNet-V5 "
        "vision tower through transformers' TimmWrapperModel (vLLM's own gemma3n_mm.py); nothing else is changed")


def main() -> int:
    oracle_path = sys.argv[1]
    version = timm_from_env()
    oracle = load_oracle(oracle_path)
    oracle.ASSUMPTIONS.append(NOTE.format(timm=version))
    return run_oracle(oracle, oracle_path)


if __name__ == "__main__":
    sys.exit(main())
