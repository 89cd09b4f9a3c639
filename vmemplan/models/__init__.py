"""Model graphs: one adapter per architecture family.

An adapter states, for a resolved :class:`~vmemplan.models.base.GraphContext`, the weight
tensors each rank holds and the KV cache each layer owns.  Adding a family is one new module
that registers its adapter with :func:`register`, plus a bundled config and tests.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import ADAPTERS, Adapter, adapter_for, register, supported_architectures

__all__ = [
    "ADAPTERS",
    "Adapter",
    "GraphContext",
    "WeightTensor",
    "adapter_for",
    "register",
    "supported_architectures",
]
