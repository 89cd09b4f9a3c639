#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on the remote-code configs of InternVL (chat format),
MiniCPM-V 2.x, Phi-4-multimodal and Alibaba-NLP's gte v1.5 (vLLM 0.33.0 internvl.py, minicpmv.py,
phi4mm.py, bert_with_rope.py::GteNewModel); also NVLM-D and Skywork-R1V on InternVL chat-format configs.

    python bench/oracle/shims_remote_standins.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in its
``SHIMS`` table; the arguments are the oracle's, unchanged.

What it does (nothing else): registers with transformers' ``AutoConfig`` the stand-in for the
config's ``model_type`` that bench/oracle/remote_code_standins.py defines (``internvl_chat``,
``minicpmv``, ``phi4mm``, ``new``: the checkpoint's own configuration_*.py is remote code, which the oracle
does not run), with that module's answers for what the checkpoint's remote processor would say
(InternVL's video token, MiniCPM-V's supported limits); for MiniCPM-V it also moves the resampler's
host ``pos_embed`` to the device as ``MiniCPMVBaseModel._ensure_resampler_device`` does after the
weights load on a GPU host (same shape and dtype; as bench/oracle/shims_minicpmo.py).  It allocates
nothing; every module, parameter, buffer and KV cache spec is built by vLLM's own code.  Recorded in
the fixture's ``assumptions``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_remote_standins.py: the config's remote-code model_type registered with "
        "transformers' AutoConfig as bench/oracle/remote_code_standins.py's stand-in (the sub-configs as config "
        "objects, the keys vLLM reads as attributes); MiniCPM-V's resampler host pos_embed moved to the device as "
        "after loading")


def _model_type(config_arg: str) -> str:
    path = Path(config_arg)
    return str(json.loads((path / "config.json" if path.is_dir() else path).read_text()).get("model_type"))


def _move_resampler_buffers() -> None:
    import torch
    import vllm.model_executor.models.minicpmv as mv

    original = mv.MiniCPMV2_6.init_resampler

    def init_resampler(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        resampler = original(self, *args, **kwargs)
        for owner in resampler.modules():
            for name, buf in list(owner._buffers.items()):
                if buf is not None and not buf.is_meta:
                    owner._buffers[name] = torch.empty(buf.shape, dtype=buf.dtype, device="meta")
        return resampler

    mv.MiniCPMV2_6.init_resampler = init_resampler


def install(oracle: ModuleType) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from remote_code_standins import STANDINS

    kind = _model_type(sys.argv[1])
    STANDINS[kind]()
    if kind == "minicpmv":
        _move_resampler_buffers()


if __name__ == "__main__":
    raise SystemExit(shim_main(install, NOTE))
