"""vLLM 0.33 refuses architectures its registry served once (_PREVIOUSLY_SUPPORTED_MODELS)."""

from __future__ import annotations

import pytest

from vmemplan.api import plan_from_flags
from vmemplan.core.errors import UnsupportedArchitecture


def test_an_architecture_vllm_no_longer_serves_gets_vllms_message():
    with pytest.raises(UnsupportedArchitecture) as err:
        plan_from_flags(model="MiniMaxAI/MiniMax-M1", gpu="h200", tensor_parallel_size=8)
    assert "was supported in vLLM until v0.23.0, and is not supported anymore" in err.value.message
    assert err.value.exit_code == 4


def test_the_release_that_still_served_it_is_not_refused_for_that_reason():
    with pytest.raises(UnsupportedArchitecture) as err:
        plan_from_flags(model="MiniMaxAI/MiniMax-M1", gpu="h200", tensor_parallel_size=8, vllm_version="0.20.0")
    assert "not supported anymore" not in err.value.message  # vmemplan's own: no family for lightning attention
