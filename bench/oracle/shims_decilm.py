#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on DeciLMForCausalLM (Llama-3.1/3.3-Nemotron Super/Ultra;
vLLM 0.33.0 model_executor/models/nemotron_nas.py).

    python bench/oracle/shims_decilm.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: these checkpoints' config has ``model_type`` "nemotron-nas", whose config class
(``configuration_decilm.py::DeciLMConfig``, ``auto_map``) ships as remote code; transformers
5.20 does not know the type and the oracle does not run remote code, so transformers refuses
the config ("contains custom code ... trust_remote_code").  On a GPU host the user passes
``--trust-remote-code`` and the remote class loads.  A plain ``model_type: llama`` copy is no
stand-in: LlamaConfig keeps ``block_configs`` as a list of dicts, while vLLM reads them as
objects (nemotron_nas.py::DeciLMDecoderLayer ``block_config.attention.no_op``,
``.attention.n_heads_in_group``, ``.ffn.no_op``, ``.ffn.ffn_mult``;
config/model.py::ModelConfig.get_num_layers_by_block_type;
transformers_utils/model_arch_config_convertor.py::NemotronNasModelArchConfigConvertor, which
vLLM picks by the model_type "nemotron-nas" itself).

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` a stand-in
``DeciLMConfig`` for "nemotron-nas" that does what the published class does with the fields
vLLM reads: a ``LlamaConfig`` whose ``block_configs`` entries become objects with an
``attention`` and an ``ffn`` sub-config carrying the entry's keys as attributes (the published
``block_config.py::FFNConfig`` always has ``ffn_mult``: None for a no-op or linear-replaced FFN,
else rounded to 6 digits), and ``intermediate_size`` / ``num_key_value_heads`` set to None after
the base initialiser (DeciLMConfig.__init__ does the same: both are per layer).  It allocates
nothing; every module, parameter, buffer and KV cache spec is built by vLLM's own code.  The
stand-in is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_decilm.py: model_type nemotron-nas registered with transformers' "
        "AutoConfig as a stand-in for the checkpoint's remote configuration_decilm.py::DeciLMConfig: "
        "LlamaConfig with block_configs[i] turned into objects (attention / ffn sub-configs with the "
        "entry's keys as attributes; ffn.ffn_mult None for a no-op FFN, else rounded to 6 digits, as "
        "block_config.py::FFNConfig) and intermediate_size / num_key_value_heads set to None after "
        "LlamaConfig.__init__, as DeciLMConfig does; no tensor is created by the shim")


def _block(entry):
    if not isinstance(entry, dict):
        return entry
    attention = SimpleNamespace(**dict(entry.get("attention") or {}))
    ffn = dict(entry.get("ffn") or {})
    mult = ffn.get("ffn_mult")
    ffn["ffn_mult"] = None if ffn.get("no_op") or ffn.get("replace_with_linear") or mult is None else round(mult, 6)
    return SimpleNamespace(attention=attention, ffn=SimpleNamespace(**ffn))


def install() -> None:
    from transformers import AutoConfig, LlamaConfig

    class DeciLMConfig(LlamaConfig):
        model_type = "nemotron-nas"

        def __init__(self, block_configs=None, **kwargs):
            kwargs.pop("intermediate_size", None)  # None in these configs; LlamaConfig's strict fields want an int
            kwargs.pop("num_key_value_heads", None)
            super().__init__(**kwargs)
            # DeciLMConfig.__init__ sets both to None (per-layer values); bypass the strict field check
            object.__setattr__(self, "intermediate_size", None)
            object.__setattr__(self, "num_key_value_heads", None)
            self.block_configs = [_block(b) for b in block_configs] if block_configs is not None else None

        def to_dict(self):
            out = super().to_dict()
            if self.block_configs is not None:
                out["block_configs"] = [
                    {"attention": vars(b.attention), "ffn": vars(b.ffn)} if isinstance(b, SimpleNamespace) else b
                    for b in self.block_configs
                ]
            return out

    AutoConfig.register("nemotron-nas", DeciLMConfig)


def main() -> int:
    return shim_main(lambda _oracle: install(), NOTE)


if __name__ == "__main__":
    sys.exit(main())
