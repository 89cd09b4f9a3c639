#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on NemotronHPuzzleForCausalLM (vLLM 0.33.0
model_executor/models/nemotron_h.py::NemotronHForCausalLM, the registry's target for it).

    python bench/oracle/shims_nemotron_h_puzzle.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: a Puzzle checkpoint's config has ``model_type`` "nemotron_h_puzzle", whose config class
(``NemotronHPuzzleConfig``) ships as remote code with the checkpoint; neither transformers
5.20 nor vLLM 0.33.0 has it, and the oracle does not run remote code, so transformers refuses
the config.  vLLM's model reads one thing from that class beyond ``NemotronHConfig``:
``config.get_nemotron_h_config_for_layer(layer_idx)`` (NemotronHMLPDecoderLayer,
NemotronHMoEDecoderLayer, NemotronHAttentionDecoderLayer), the layer's config, which the
Puzzle class builds as the model-level config with ``block_configs[layer_idx]``'s entries set
over it (the published class and its re-implementations agree on that).

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` a
stand-in ``NemotronHPuzzleConfig`` for "nemotron_h_puzzle": transformers' own
``NemotronHConfig`` (``block_configs`` kept as the attribute it is) plus that
``get_nemotron_h_config_for_layer`` (a shallow copy with the block's non-null entries set).
It allocates nothing; every module, parameter, buffer and KV cache spec is built by vLLM's own
code from the per-layer configs.  The stand-in is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import copy
import sys

from _shim import load_oracle, run_oracle  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_nemotron_h_puzzle.py: model_type nemotron_h_puzzle registered with "
        "transformers' AutoConfig as a stand-in for the checkpoint's remote NemotronHPuzzleConfig: "
        "transformers' NemotronHConfig plus get_nemotron_h_config_for_layer(i) = the model config "
        "with block_configs[i]'s non-null entries set over it (what vLLM's nemotron_h.py decoder "
        "layers read); no tensor is created by the shim")


def install() -> None:
    from transformers import AutoConfig, NemotronHConfig

    class NemotronHPuzzleConfig(NemotronHConfig):
        model_type = "nemotron_h_puzzle"

        def get_nemotron_h_config_for_layer(self, layer_idx: int) -> NemotronHConfig:
            layer = copy.copy(self)
            for key, value in (self.block_configs[layer_idx] or {}).items():
                if value is not None:
                    setattr(layer, key, value)
            return layer

    AutoConfig.register("nemotron_h_puzzle", NemotronHPuzzleConfig)


def main() -> int:
    oracle_path = sys.argv[1]
    oracle = load_oracle(oracle_path)
    install()
    oracle.ASSUMPTIONS.append(NOTE)
    return run_oracle(oracle, oracle_path)


if __name__ == "__main__":
    sys.exit(main())
