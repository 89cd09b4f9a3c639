"""LongCat-Flash-Lite (``LongcatFlashNgramForCausalLM``, Meituan): LongCat-Flash with an n-gram
embedder beside the token embedding.

Mirrors vllm/model_executor/models/longcat_flash_ngram.py (0.33.0): FlashNgramModel is
longcat_flash.py::FlashModel (see :class:`~vmemplan.models.longcat_flash.LongcatFlash`) plus, on
the first pipeline stage when the config has ``ngram_vocab_size_ratio``, an NgramEmbedding:

* ``k × (n − 1)`` embedders (``k = emb_split_num``, ``n = emb_neighbor_num``), embedder ``i``
  a table of ``m + 2i + 1`` rows (``m = ngram_vocab_size_ratio × vocab_size``) of
  ``hidden_size // (k × (n − 1))`` columns, all concatenated into one VocabParallelEmbedding
  ``oe_embedder`` (the summed rows padded to 64, split over TP);
* ``oe_projection`` ``[k(n − 1), oe_dim, hidden_size]``, replicated;
* three int32 buffers for the n-gram id kernel: ``ne_weights`` ``[n − 1, k, n]``, ``ne_mods``
  ``[n − 1, k]`` and ``exclusive_sizes`` ``[k(n − 1) + 1]``.

The n-gram tables and projection are in the config's ``torch_dtype`` (``_config_dtype``), not
vLLM's ``--dtype``.  The per-request token context and ``inputs_embeds`` buffer of
LongcatNgramModelState are V2-model-runner state, not weights.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.dense import pad_vocab
from vmemplan.models.longcat_flash import LongcatFlash

__all__ = ["LongcatFlashNgram"]


@register
class LongcatFlashNgram(LongcatFlash):
    """LongcatFlash plus the NgramEmbedding tables on the first stage."""

    architectures = ("LongcatFlashNgramForCausalLM",)

    def ngram_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        text = self.config.text
        ratio = text.get("ngram_vocab_size_ratio")
        if ratio is None:
            return []
        k = int(text["emb_split_num"])
        n = int(text["emb_neighbor_num"])
        hidden = self.config.hidden_size
        m = ratio * self.config.vocab_size
        embedders = k * (n - 1)
        oe_dim = hidden // embedders
        rows = sum(int(m + 2 * i + 1) for i in range(embedders))
        raw = text.get("torch_dtype") or text.get("dtype")
        dtype = str(raw).removeprefix("torch.") if isinstance(raw, str) else "bfloat16"
        return [
            WeightTensor("ngram_embeddings.oe_embedder", "embedding", pad_vocab(rows) // ctx.tensor_parallel_size,
                         oe_dim, dtype=dtype),
            WeightTensor("ngram_embeddings.oe_projection", "buffer", embedders * oe_dim, hidden, dtype=dtype),
            WeightTensor("ngram_embeddings.ne_weights", "buffer", (n - 1) * k, n, dtype="int32"),
            WeightTensor("ngram_embeddings.ne_mods", "buffer", n - 1, k, dtype="int32"),
            WeightTensor("ngram_embeddings.exclusive_sizes", "buffer", embedders + 1, 1, dtype="int32"),
        ]

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        if ctx.pipeline_rank == 0:
            out += self.ngram_tensors(ctx)
        return out
