#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on DeepseekOCR2ForCausalLM (vLLM 0.33.0
vllm/model_executor/models/deepseek_ocr2.py).

    python bench/oracle/shims_deepseek_ocr2.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

Why: as DeepSeek-OCR, the model's ``__init__`` looks the image placeholder up in the tokenizer
(``cached_tokenizer_from_config(model_config).vocab["<image>"]``), and the oracle runs with
``skip_tokenizer_init`` on a config-only directory, so the tokenizer is ``None``.

What the shim does, and nothing else: the tokenizer stand-in of ``shims_deepseek_vl2.py`` (a
``vocab`` mapping ``"<image>"`` to the text config's ``vocab_size - 1``), installed in
``deepseek_ocr2`` as well.  The id is stored as an int attribute only; no tensor or KV cache spec
depends on it.  The stand-in is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

import shims_deepseek_vl2 as base  # bench/oracle/shims_deepseek_vl2.py (this script's folder)
from _shim import load_oracle, run_oracle

NOTE = ("shim bench/oracle/shims_deepseek_ocr2.py: cached_tokenizer_from_config in deepseek_ocr2 returns a "
        "stand-in whose vocab maps '<image>' to vocab_size - 1 (the oracle has no tokenizer; the id is an int "
        "attribute, no tensor depends on it)")


def main() -> int:
    oracle_path, config_path = sys.argv[1], sys.argv[2]
    oracle = load_oracle(oracle_path)
    base._MODULES = ("vllm.model_executor.models.deepseek_ocr2",)
    sys.meta_path.insert(0, base._Patcher(base._image_token_id(config_path)))
    oracle.ASSUMPTIONS.append(NOTE)
    return run_oracle(oracle, oracle_path)


if __name__ == "__main__":
    sys.exit(main())
