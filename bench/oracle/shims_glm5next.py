#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on Glm5NextForCausalLM ("GLM-5.3-Flash", vLLM 0.33.0
vllm/models/glm5next/).

    python bench/oracle/shims_glm5next.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: every KDA layer (vllm/models/glm5next/common/kda.py::Glm5NextLinearAttention.__init__)
resolves its chunked-prefill kernel with ``_resolve_kda_prefill_backend``; on a CUDA device of
capability 9.x/10.x/12.x with a bf16 model, ``linear_head_dim`` 128 and a bounded gate
(``linear_lower_bound`` set) it picks ``"flashkda"``, and then runs ``import vllm._flashkda_C``
(the compiled FlashKDA extension shipped in the CUDA wheel) and asks
``torch.ops._flashkda_C.get_workspace_size(max_num_batched_tokens, local_heads, max_num_seqs)``
for the size of a byte workspace.  The extension cannot load on the oracle's CPU host (it links
``libcuda.so.1``), so the constructor stops at that import.

What the shim does, and nothing else: after the oracle's own emulation set-up it registers an
empty module as ``vllm._flashkda_C`` (as the oracle does for the FlashMLA extensions) and a
``torch.ops._flashkda_C`` namespace whose only op is ``get_workspace_size``; any other op
(``fwd``, the kernel itself, which the oracle never runs) raises.  ``get_workspace_size`` is
computed as the compiled op computes it: the x86-64 body of ``get_workspace_size(long, long,
long)`` in ``vllm/_flashkda_C.abi3.so`` of the vLLM 0.33.0 wheel (schema
``get_workspace_size(int T_total, int H, int N=1) -> int``) is pure integer arithmetic,
``(ceil(T_total / 16) + N) * H * 27 * 512`` bytes (read with ``objdump -d``; no CUDA call).

Why it does not change the figures: the workspace is not a parameter or a buffer.  The layer
only records ``((workspace_size,), torch.uint8)`` among its ``_flashkda_buffer_specs``; the bytes
are taken from vLLM's shared workspace manager (``current_workspace_manager().get_simultaneous``)
on the first FlashKDA prefill that has attention metadata (the profile run has none, and the layer
returns before any kernel then), as runtime memory shared by all KDA layers.  The oracle counts
neither (the KV budget is its input); vmemplan reports them apart
(vmemplan/models/glm5next.py::Glm5Next.flashkda_buffer_bytes).  What the FlashKDA choice
does change is recorded by vLLM's own code: ``Glm5NextLinearAttention.get_kv_cache_spec`` gives
the ``MambaSpec`` ``prefill_checkpoint_alignment`` 16 and ``num_prefill_checkpoint_blocks`` 1
(vllm/model_executor/layers/mamba/kda_checkpoint.py), exactly as on an SM90/SM100 host.  The
stand-in and the workspace size it answered are recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys
import types

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_glm5next.py: the compiled FlashKDA extension vllm._flashkda_C "
        "(links libcuda, cannot load on the CPU host) registered as present, as on a real CUDA "
        "install; torch.ops._flashkda_C.get_workspace_size answers as the compiled op computes it "
        "((ceil(T/16) + N) * H * 13824 bytes, from its x86-64 body in the 0.33.0 wheel); the "
        "workspace is a shared runtime buffer (workspace manager, first prefill), not a parameter or "
        "buffer, so no figure here depends on it; FlashKDA selection itself (MambaSpec "
        "prefill_checkpoint_alignment 16) comes from vLLM's own code")


def flashkda_workspace_size(t_total: int, heads: int, seqs: int = 1) -> int:
    """``torch.ops._flashkda_C.get_workspace_size(T_total, H, N)`` of the vLLM 0.33.0 wheel:
    ``(ceil(T_total / 16) + N) * H * 27 * 512`` bytes (the compiled op's integer arithmetic)."""
    chunks = -(-t_total // 16)
    return (chunks + seqs) * heads * 27 * 512


class _FlashKdaOps:
    """``torch.ops._flashkda_C``: only ``get_workspace_size``; the kernel op raises."""

    def __init__(self, oracle) -> None:
        self._oracle = oracle
        self._answered: set[tuple[int, int, int]] = set()

    def get_workspace_size(self, t_total: int, heads: int, seqs: int = 1) -> int:
        size = flashkda_workspace_size(int(t_total), int(heads), int(seqs))
        key = (int(t_total), int(heads), int(seqs))
        if key not in self._answered:
            self._answered.add(key)
            self._oracle.ASSUMPTIONS.append(
                f"shim bench/oracle/shims_glm5next.py: FlashKDA get_workspace_size(T={key[0]}, "
                f"H={key[1]}, N={key[2]}) = {size} bytes (per-rank runtime workspace, not counted)")
        return size

    def __getattr__(self, op: str):
        if op.startswith("__"):
            raise AttributeError(op)
        raise RuntimeError(f"torch.ops._flashkda_C.{op}: FlashKDA kernel not emulated (shims_glm5next)")


def install(oracle) -> None:
    import torch

    name = "vllm._flashkda_C"
    mod = types.ModuleType(name)
    mod.__doc__ = "stand-in installed by bench/oracle/shims_glm5next.py (no libcuda on this host)"
    sys.modules[name] = mod
    torch.ops._flashkda_C = _FlashKdaOps(oracle)
    oracle.ASSUMPTIONS.append(NOTE)


def main() -> int:
    return shim_main(install)


if __name__ == "__main__":
    sys.exit(main())
