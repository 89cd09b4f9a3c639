"""--runner pooling builds no LM head (vllm/model_executor/models/adapters.py::
_create_pooling_model_cls swaps ParallelLMHead for a StageMissingLayer, 0.33.0)."""

from __future__ import annotations

from vmemplan.api import plan_with_request
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.pipeline import graph_context


def _unrounded(**flags):
    req, plan = plan_with_request(gpu="h100", **flags)
    return weight_bytes_per_rank(req.adapter.weight_tensors(graph_context(req, 0)), model_dtype=req.dtype,
                                 scheme=req.quant_scheme).unrounded_bytes, plan


def test_pooling_drops_an_untied_head():
    # Qwen3-8B: untied lm_head of 151,936 rows (a multiple of 64) x 4,096 x 2 B = 1,244,659,712 B
    tensors_bytes, gen = _unrounded(model="Qwen/Qwen3-8B")
    _, pool = _unrounded(model="Qwen/Qwen3-8B", runner="pooling")
    head = 151_936 * 4_096 * 2
    # the plan's weights are allocator-rounded: the head was one allocation, rounded up to 2 MiB
    rounded_head = -(-head // (2 << 20)) * (2 << 20)
    assert gen.per_rank.weights_bytes - pool.per_rank.weights_bytes == rounded_head


def test_pooling_keeps_a_tied_model_unchanged():
    # Llama-3.2-1B ties its head to the embedding: nothing to drop
    _, gen = _unrounded(model="meta-llama/Llama-3.2-1B-Instruct")
    _, pool = _unrounded(model="meta-llama/Llama-3.2-1B-Instruct", runner="pooling")
    assert gen.per_rank.weights_bytes == pool.per_rank.weights_bytes
