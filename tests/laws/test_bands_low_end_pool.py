"""``bands.low_end_pool`` (what a sweep reads of the band's low end) agrees with ``bands.low_end``
(the low-end plan the gates read), and sits below the central figures."""

from __future__ import annotations

from vmemplan.api import plan_from_flags
from vmemplan.laws.bands import low_end, low_end_pool


def test_low_end_pool_is_the_low_end_plans() -> None:
    plan = plan_from_flags(model="meta-llama/Llama-3.1-8B", gpu="h100", max_model_len=8192)
    assert plan.band is not None
    tokens, pool = low_end_pool(plan)
    low = low_end(plan)
    assert (tokens, pool) == (low.kv_cache.tokens, low.pool)
    assert tokens == plan.band.tokens_range[0] < plan.kv_cache.tokens
    # the low end re-sizes the same groups: same block, fewer blocks
    assert pool.block_bytes == plan.pool.block_bytes and pool.num_blocks < plan.pool.num_blocks
