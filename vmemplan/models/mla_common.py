"""The MLA families built on :class:`~vmemplan.models.deepseek.DeepseekMLA` (GLM-4.7-Flash,
MiniCPM3, ...) with a default (non-YaRN) rope: the rotary cache ``[max_position,
qk_rope_head_dim]`` in the model dtype (vllm/model_executor/layers/rotary_embedding/base.py::
RotaryEmbedding, 0.33.0).  Every DeepseekMLA layer holds the decode-time copies and scales of
:mod:`vmemplan.models.mla_copies`.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.deepseek import DeepseekMLA
from vmemplan.models.mla_copies import mla_decode_copies

__all__ = ["MlaDecoder", "mla_decode_copies"]


class MlaDecoder(DeepseekMLA):
    """DeepseekMLA with the rotary cache in the model dtype unless the config asks for DeepSeek's
    YaRN.  Not registered: the families subclass it."""

    architectures = ()

    def rope_type(self) -> str:
        rs = self.config.rope_scaling() or {}
        return str(rs.get("rope_type", rs.get("type", "default")) or "default")

    def rope_cache(self, ctx: GraphContext | None = None) -> WeightTensor:
        t = super().rope_cache(ctx)
        if self.rope_type() in ("default", "none"):
            return WeightTensor(t.name, t.kind, self.config.max_position_embeddings, t.cols)
        return t
