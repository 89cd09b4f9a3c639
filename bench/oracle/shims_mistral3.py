#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on Mistral3ForConditionalGeneration (vLLM 0.33.0
model_executor/models/mistral3.py), for checkpoints that ship an lm_head of their own.

    python bench/oracle/shims_mistral3.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: Mistral-Small-3.1's config.json says nothing about tying, so transformers 5's composite
``Mistral3Config`` defaults ``tie_word_embeddings`` to True, and vLLM copies that onto the text
config (vllm/config/vllm.py::VllmConfig.with_hf_config).  On a real host vLLM then looks at the
checkpoint: ``VllmConfig.__post_init__`` calls ``ModelConfig.maybe_untie_word_embeddings``
(vllm/config/model.py) for every load format but ``dummy`` / ``sharded_state`` /
``runai_streamer_sharded``; it unties both config levels when the config says tied and
``checkpoint_has_lm_head`` (vllm/transformers_utils/config.py: any safetensors tensor name ending
in ``lm_head.weight``, read from ``get_safetensors_params_metadata``) answers True.  After loading,
``maybe_retie_word_embeddings`` (model_loader/weight_tying.py, run by
``process_weights_after_loading``) ties them again only if the loaded lm_head equals the
embeddings.  The oracle holds config.json only (no safetensors to list) and builds with
``load_format="dummy"``, so it never takes that path and ties the lm_head away.

What the shim does, and nothing else (only for the checkpoints in ``CHECKPOINT_LM_HEAD``; any other
config runs the oracle unchanged):

* the safetensors listing: where vLLM's ``get_safetensors_params_metadata`` finds no safetensors
  in the oracle's config directory, it answers the checkpoint's lm_head tensor name (the only
  thing ``checkpoint_has_lm_head`` reads), as the checkpoint's index lists it;
* the load format: right after ``EngineArgs.create_engine_config``, it calls vLLM's own
  ``model_config.maybe_untie_word_embeddings()``, the call ``VllmConfig.__post_init__`` makes for a
  real load format (the oracle's ``dummy`` skips it); vLLM decides;
* the loaded contents: ``maybe_retie_word_embeddings`` compares the loaded lm_head with the
  embeddings (``torch.equal``), which meta tensors cannot answer; the checkpoint's lm_head is its
  own trained matrix (Mistral-Small-24B is untied), so the comparison answers "different" for meta
  tensors and vLLM keeps the lm_head, as it does on a GPU host.

Every module, parameter, buffer and KV cache spec is built by vLLM's own code; the shim creates no
tensor.  The stand-ins are recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

#: config stem -> the checkpoint's lm_head tensor name (the HF-format shards of
#: mistralai/Mistral-Small-3.1-24B-Instruct-2503, transformers 4.50 Mistral3 layout)
CHECKPOINT_LM_HEAD = {"mistralai--Mistral-Small-3.1-24B-Instruct-2503": "language_model.lm_head.weight"}

NOTE = ("shim bench/oracle/shims_mistral3.py: the checkpoint's safetensors listing (absent: config.json "
        "only) stands in as its lm_head tensor name {name!r}, and vLLM's own "
        "ModelConfig.maybe_untie_word_embeddings() runs after create_engine_config as VllmConfig.__post_init__ "
        "runs it for a real load format (the oracle's load_format dummy skips it); maybe_retie_word_embeddings' "
        "content comparison (lm_head.weight.cpu() vs embed_tokens.weight.cpu(), torch.equal) answers False on "
        "meta tensors (the checkpoint's lm_head is its own matrix) and vLLM keeps the lm_head; no tensor is "
        "created by the shim")


def install(name: str) -> None:
    import torch
    import vllm.model_executor.model_loader.utils as model_loader_utils
    import vllm.model_executor.model_loader.weight_tying as weight_tying
    import vllm.transformers_utils.config as tu_config
    from vllm.engine.arg_utils import EngineArgs

    listing = tu_config.get_safetensors_params_metadata

    def listing_or_standin(model: str, **kwargs: object) -> dict:
        found = listing(model, **kwargs)
        return found if found else {name: {}}

    tu_config.get_safetensors_params_metadata = listing_or_standin

    create = EngineArgs.create_engine_config

    def create_then_untie(self: EngineArgs, *args: object, **kwargs: object) -> object:
        vllm_config = create(self, *args, **kwargs)
        vllm_config.model_config.maybe_untie_word_embeddings()
        return vllm_config

    EngineArgs.create_engine_config = create_then_untie  # type: ignore[method-assign]

    retie = model_loader_utils.maybe_retie_word_embeddings

    class TorchWithCheckpointContents:
        """weight_tying's ``torch``: ``equal`` says "different" for meta tensors (the loaded lm_head
        is the checkpoint's own matrix); everything else is torch's."""

        def __getattr__(self, attr: str) -> object:
            return getattr(torch, attr)

        @staticmethod
        def equal(a: torch.Tensor, b: torch.Tensor) -> bool:
            return False if a.is_meta or b.is_meta else torch.equal(a, b)

    weight_tying.torch = TorchWithCheckpointContents()  # type: ignore[attr-defined]

    def retie_on_meta(model: object, model_config: object) -> None:
        """vLLM's maybe_retie_word_embeddings, with ``.cpu()`` of a meta tensor left on meta (the
        comparison's copy to the host; no data to copy)."""
        to_cpu = torch.Tensor.cpu

        def cpu(self: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
            return self if self.is_meta else to_cpu(self, *args, **kwargs)

        torch.Tensor.cpu = cpu  # type: ignore[method-assign]
        try:
            retie(model, model_config)
        finally:
            torch.Tensor.cpu = to_cpu  # type: ignore[method-assign]

    model_loader_utils.maybe_retie_word_embeddings = retie_on_meta

def main() -> int:
    name = CHECKPOINT_LM_HEAD.get(Path(sys.argv[2]).stem if len(sys.argv) > 2 else "")
    if name is None:
        return shim_main(lambda _oracle: None)
    return shim_main(lambda _oracle: install(name), NOTE.format(name=name))


if __name__ == "__main__":
    sys.exit(main())
