"""The bottom floor: vocabulary every other layer shares, importing nothing else from vmemplan.

* :mod:`~vmemplan.core.units` - bytes inside, GiB at the edges (``cdiv``, ``format_gib``);
* :mod:`~vmemplan.core.errors` - the error classes and their exit codes;
* :mod:`~vmemplan.core.kv_specs` - the per-layer KV cache spec dataclasses and the dtype table;
* :mod:`~vmemplan.core.graph` - :class:`GraphContext` and :class:`WeightTensor`;
* :mod:`~vmemplan.core.version` - vLLM version strings as release tuples.
"""
