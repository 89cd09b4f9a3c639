"""Qwen3-ASR realtime (``Qwen3ASRRealtimeGeneration``, served for the /v1/realtime endpoint, e.g.
Qwen/Qwen3-ASR-0.6B or -1.7B with that architecture).

vllm/model_executor/models/qwen3_asr_realtime.py (0.33.0): ``Qwen3ASRRealtimeGeneration`` subclasses
qwen3_asr.py::Qwen3ASRForConditionalGeneration and only adds ``realtime_max_tokens``, the streaming
audio buffer (host-side numpy) and its own multimodal processor (``Qwen3ASRRealtimeMultiModalProcessor``,
registered with the same ``Qwen3ASRProcessingInfo`` and ``Qwen3ASRDummyInputsBuilder``).  Its
``__init__`` is the parent's, so the tensors, the KV cache and the encoder budget are Qwen3-ASR's
(:class:`vmemplan.models.qwen_audio.Qwen3ASR`).
"""

from __future__ import annotations

from vmemplan.models.base import register
from vmemplan.models.qwen_audio import Qwen3ASR

__all__ = ["Qwen3ASRRealtime"]


@register
class Qwen3ASRRealtime(Qwen3ASR):
    """Qwen3-ASR with the realtime processor: the same model on the GPU."""

    architectures = ("Qwen3ASRRealtimeGeneration",)
