#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on models whose module imports torchaudio, which the oracle's
venv does not ship: MiDashengLMModel (vLLM 0.33.0 model_executor/models/midashenglm.py, ``import
torchaudio.functional as F`` at module level, so vLLM's registry cannot even inspect the class) and
FunASRForConditionalGeneration (funasr.py imports vllm/transformers_utils/processors/funasr.py, which
imports ``torchaudio.compliance.kaldi``; its ``fbank`` runs only on audio input).

    python bench/oracle/shims_torchaudio.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in its
``SHIMS`` table; the arguments are the oracle's, unchanged.

What the shim does, and nothing else: it registers a stand-in ``torchaudio`` package whose
``functional.melscale_fbanks(n_freqs, f_min, f_max, n_mels, sample_rate, ...)`` returns
``torch.zeros(n_freqs, n_mels)``: the shape torchaudio returns, in the default dtype and on the
default device as torchaudio's (its filter bank is built from ``torch.linspace`` without a dtype
or device), so ``DashengFrontend``'s ``melscale_fbanks`` buffer has the bytes it has on a GPU
host; only the values (meta tensors have none) differ.  ``spectrogram`` and ``amplitude_to_DB``
are run only in ``forward``, ``compliance.kaldi.fbank`` only in the FunASR processor; all three
raise if called.  The stand-in is recorded in the fixture's
``assumptions``.
"""

from __future__ import annotations

import sys
import types

from _shim import shim_main  # bench/oracle/_shim.py

NOTE = ("shim bench/oracle/shims_torchaudio.py: torchaudio is absent from the oracle venv; a stand-in "
        "torchaudio.functional.melscale_fbanks returns torch.zeros(n_freqs, n_mels) in the default "
        "dtype/device (torchaudio's shape, dtype and device; values differ), spectrogram / "
        "amplitude_to_DB / compliance.kaldi.fbank raise if called (forward / processor only)")


def _forward_only(name: str):
    def call(*args: object, **kwargs: object) -> object:
        raise RuntimeError(f"torchaudio stand-in: {name} is not emulated (forward only)")

    return call


def install(oracle) -> None:
    import torch

    def melscale_fbanks(n_freqs: int, f_min: float, f_max: float, n_mels: int, sample_rate: int,
                        norm: str | None = None, mel_scale: str = "htk") -> torch.Tensor:
        return torch.zeros(n_freqs, n_mels)

    package = types.ModuleType("torchaudio")
    functional = types.ModuleType("torchaudio.functional")
    functional.melscale_fbanks = melscale_fbanks  # type: ignore[attr-defined]
    functional.spectrogram = _forward_only("spectrogram")  # type: ignore[attr-defined]
    functional.amplitude_to_DB = _forward_only("amplitude_to_DB")  # type: ignore[attr-defined]
    compliance = types.ModuleType("torchaudio.compliance")
    kaldi = types.ModuleType("torchaudio.compliance.kaldi")
    kaldi.fbank = _forward_only("compliance.kaldi.fbank")  # type: ignore[attr-defined]
    compliance.kaldi = kaldi  # type: ignore[attr-defined]
    package.functional = functional  # type: ignore[attr-defined]
    package.compliance = compliance  # type: ignore[attr-defined]
    for name, module in (("torchaudio", package), ("torchaudio.functional", functional),
                         ("torchaudio.compliance", compliance), ("torchaudio.compliance.kaldi", kaldi)):
        sys.modules.setdefault(name, module)


def main() -> int:
    return shim_main(install, NOTE)


if __name__ == "__main__":
    sys.exit(main())
