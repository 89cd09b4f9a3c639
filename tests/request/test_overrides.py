"""--hf-overrides and --language-model-only, as vLLM applies them."""

from __future__ import annotations

import json

from tests.request._cli import run
from vmemplan.request.overrides import apply_hf_overrides


def test_hf_overrides_flat_nested_and_dict_valued():
    """vllm/config/model.py::_apply_dict_overrides: nested configs update key by key, other
    mappings (rope_scaling) are replaced whole, flat values replace the attribute."""
    cfg = {"max_position_embeddings": 8192, "rope_scaling": {"type": "linear", "factor": 2.0, "x": 1},
           "text_config": {"num_hidden_layers": 32, "hidden_size": 4096}}
    out = apply_hf_overrides(cfg, '{"max_position_embeddings": 32768, "rope_scaling": {"type": "yarn", "factor": 4.0},'
                                  ' "text_config": {"num_hidden_layers": 16}}')
    assert out["max_position_embeddings"] == 32768
    assert out["rope_scaling"] == {"type": "yarn", "factor": 4.0}
    assert out["text_config"] == {"num_hidden_layers": 16, "hidden_size": 4096}
    assert cfg["max_position_embeddings"] == 8192  # the input is not changed


def test_hf_overrides_lift_the_models_context_length(capsys):
    args = ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--max-model-len", "200000"]
    assert run(args, capsys).code == 2  # longer than max_position_embeddings=131072
    r = run([*args, "--hf-overrides", '{"max_position_embeddings": 262144}', "-f", "json"], capsys)
    assert r.code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["engine"]["max_model_len"] == 200_000 and "--hf-overrides" in d["vllm_args"]["modelled"]


def test_language_model_only_is_every_limit_zero(capsys):
    """vllm/config/multimodal.py::get_limit_per_prompt returns 0 for every modality."""
    def per_rank(*flags):
        r = run(["size", "Qwen/Qwen2.5-VL-7B-Instruct", "--gpu", "h100", *flags, "-f", "json"], capsys)
        assert r.code == 0, r.stderr
        return json.loads(r.stdout)["per_rank"]

    full = per_rank()
    lm_only = per_rank("--language-model-only")
    assert lm_only == per_rank("--limit-mm-per-prompt", '{"image": 0, "video": 0}')
    assert lm_only["weights_bytes"] < full["weights_bytes"]  # no vision tower
