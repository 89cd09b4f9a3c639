#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on Qwen4ExpForCausalLM (vLLM 0.33.0 vllm/models/qwen4_exp/).

    python bench/oracle/shims_qwen4_exp.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: the n-gram (PLE) embedding table, vllm/models/qwen4_exp/common/ngram_embedding.py, is
sharded over the "Engram" tensor-parallel group (``get_etp_group()``).  vLLM builds that group
in vllm/distributed/parallel_state.py::initialize_model_parallel: with no ``engram_config``
(or one whose parallel size equals the TP size) ``_ETP = _TP``, the same group object.  The
oracle fakes the process groups itself (``install_fake_groups``: TP, PP, DP, DCP, PCP, EP, EPLB)
and has no ``_ETP``, so the model's constructor stops at ``assert _ETP is not None``.

What the shim does, and nothing else: after the oracle's ``install_fake_groups`` it sets
``_ETP`` exactly as vLLM does for this case, ``_ETP = _TP`` (the faked TP group: world size
= the case's TP, rank 0), and refuses to run when ``engram_config`` asks for another Engram
TP size (a case it does not emulate).  Parameter shapes read the group's world size and rank,
which are then the ones vLLM would give rank 0; KV cache specs do not read it.

Second: with vLLM's default ``EngramConfig`` (``cpu_offload=True``, which
``VllmConfig._resolve_and_verify_engram_config`` creates for a model with n-gram layers) the
table is a ``Qwen4ExpPLEPinnedHostEmbedding``: ``torch.empty(..., device="cpu",
pin_memory=True)`` looked up through ``get_accelerator_view_from_cpu_tensor`` (a UVA view, no
device memory).  A CPU-only host has no pinned allocator, and the real table is ~100 GB of
host memory.  The shim allocates it as a one-element CPU tensor expanded to the same shape and
dtype and lets the UVA view be that CPU tensor.  Neither the table nor its view is GPU memory on
a real host, and the oracle counts only device tensors in the weights, so the GPU figures are
unchanged (the oracle's ``host_tensors_bytes`` for it is not the real host footprint).  The
other PLE tensors (projections, norms, hash buffers, the device ``_prefetch_ids``) are built
by vLLM's own code.  Both steps are recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import load_oracle, run_oracle  # bench/oracle/_shim.py (this script's folder)

NOTE_HOST = ("shim bench/oracle/shims_qwen4_exp.py: Qwen4ExpPLEPinnedHostEmbedding's n-gram table "
             "(EngramConfig's default cpu_offload: pinned host memory, looked up through a UVA view) "
             "allocated as a one-element CPU tensor expanded of the same shape and dtype, and its UVA view is the "
             "CPU tensor itself (the CPU host has no pinned allocator; neither is GPU memory, so GPU "
             "parameter bytes are unchanged)")
NOTE = ("shim bench/oracle/shims_qwen4_exp.py: the Engram TP group _ETP, which the oracle's faked "
        "process groups lack, set to the faked TP group as vLLM's initialize_model_parallel does "
        "without an engram_config (_ETP = _TP; world size = TP, rank 0)")


def _host_table() -> None:
    """The pinned-host n-gram table without host memory: shape and dtype only, on the CPU."""
    import torch
    import vllm.models.qwen4_exp.common.ngram_embedding as ne

    def allocate_embedding_weight(self, num_embeddings, embedding_dim, dtype):
        return torch.empty((1,), dtype=dtype, device="cpu").expand(num_embeddings, embedding_dim)

    ne.Qwen4ExpPLEPinnedHostEmbedding.allocate_embedding_weight = allocate_embedding_weight
    ne.get_accelerator_view_from_cpu_tensor = lambda t: t
    ne.is_uva_available = lambda: True


def main() -> int:
    oracle_path = sys.argv[1]
    oracle = load_oracle(oracle_path)
    original = oracle.install_fake_groups

    def install_fake_groups(vllm_config):
        original(vllm_config)
        import vllm.distributed.parallel_state as ps

        pc = vllm_config.parallel_config
        engram = getattr(vllm_config, "engram_config", None)
        if engram is not None and engram.get_parallel_size(pc) != pc.tensor_parallel_size:
            raise RuntimeError("shims_qwen4_exp: an engram_config with its own TP size is not emulated")
        ps._ETP = ps._TP
        _host_table()  # here: vLLM's model modules import only after the oracle's platform set-up
        oracle.ASSUMPTIONS.append(NOTE)
        oracle.ASSUMPTIONS.append(NOTE_HOST)

    oracle.install_fake_groups = install_fake_groups
    return run_oracle(oracle, oracle_path)


if __name__ == "__main__":
    sys.exit(main())
