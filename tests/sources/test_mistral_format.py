"""Mistral-format checkpoints (params.json + consolidated*.safetensors) read as vLLM 0.33.0 reads them
(vllm/transformers_utils/config.py::MistralConfigParser, configs/mistral.py::adapt_config_dict)."""

from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path

import pytest

from vmemplan.core.errors import ModelConfigError
from vmemplan.sources.mistral_format import common_float_dtype, config_from_params

ROOT = Path(__file__).resolve().parents[2]
ORACLE = ROOT / "tests" / "fixtures" / "oracle"
#: Pixtral-12B-2409's params.json as the remapped fixture config states it (its SOURCES.md row)
PIXTRAL_PARAMS = {
    "dim": 5120, "n_layers": 40, "head_dim": 128, "hidden_dim": 14336, "n_heads": 32, "n_kv_heads": 8,
    "rope_theta": 1_000_000_000.0, "norm_eps": 1e-05, "vocab_size": 131072,
    "vision_encoder": {"hidden_size": 1024, "num_channels": 3, "image_size": 1024, "patch_size": 16,
                       "rope_theta": 10000.0, "intermediate_size": 4096, "num_hidden_layers": 24,
                       "num_attention_heads": 16, "image_token_id": 10, "image_break_token_id": 12,
                       "image_end_token_id": 13, "adapter_bias": True},
}


def _side():
    spec = importlib.util.spec_from_file_location("vmemplan_side_mf", ROOT / "tests" / "oracle" / "vmemplan_side.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _mistral_dir(tmp_path: Path, params: dict, dtype: str = "BF16") -> Path:
    (tmp_path / "params.json").write_text(json.dumps(params))
    header = json.dumps({"w": {"dtype": dtype, "shape": [2, 2], "data_offsets": [0, 8]}}).encode()
    (tmp_path / "consolidated.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    return tmp_path


def test_pixtral_params_remap_to_the_config_vllm_builds():
    """The remap of Pixtral-12B's params.json (max_position_embeddings 128,000: neither params.json nor
    a config.json gives one; dtype from the consolidated tensors) is the fixture's config to the key."""
    built = config_from_params({**PIXTRAL_PARAMS, "max_position_embeddings": 128_000, "dtype": "bfloat16"})
    fixture = json.loads((ORACLE / "configs" / "mistralai--Pixtral-12B-2409.vllm-mistral-remap.synthetic.json")
                         .read_text())
    assert built == fixture


@pytest.mark.parametrize("tp", [1, 2])
def test_a_mistral_directory_plans_as_vllm_own_code(tmp_path, tp):
    """A directory with params.json and consolidated.safetensors is planned from params.json, and
    matches vLLM 0.33.0's own figures for Pixtral-12B exactly (the oracle fixtures)."""
    side = _side()
    fx = side.load(ORACLE / f"mistralai-Pixtral-12B-2409.vllm-mistral-remap.synthetic.tp{tp}.json")
    fx = {**fx, "config": str(_mistral_dir(tmp_path, PIXTRAL_PARAMS))}
    figures = side.vmemplan_figures(fx)
    assert "error" not in figures, figures
    assert not side.mismatches(fx, figures, side.EXACT_KEYS)
    assert figures["adapter"] == "Pixtral"


def test_config_json_beside_params_gives_the_length_and_missing_keys(tmp_path):
    """MistralConfigParser takes max_position_embeddings from config.json's text config when params.json
    has none, and adapt_config_dict fills the top-level keys it lacks from config.json."""
    d = _mistral_dir(tmp_path, PIXTRAL_PARAMS)
    (d / "config.json").write_text(json.dumps({"architectures": ["LlavaForConditionalGeneration"],
                                               "text_config": {"max_position_embeddings": 131_072},
                                               "image_token_index": 10}))
    from vmemplan.sources.local import _load_local

    source = _load_local(str(d), None)
    assert source.config["architectures"] == ["PixtralForConditionalGeneration"]
    assert source.config["text_config"]["max_position_embeddings"] == 131_072
    assert source.config["image_token_index"] == 10
    assert source.config["text_config"]["dtype"] == "bfloat16"


def test_sliding_window_list_and_yarn_remap():
    # a window every 2nd of 4 layers: pattern [4096, None] repeated 4 // 2 = 2 times
    c = config_from_params({"dim": 8, "n_layers": 4, "n_heads": 2, "n_kv_heads": 1, "hidden_dim": 16,
                            "head_dim": 4, "vocab_size": 32, "norm_eps": 1e-5, "rope_theta": 1e6,
                            "sliding_window": [4096, None],
                            "yarn": {"factor": 4, "original_max_position_embeddings": 8192, "beta": 32, "alpha": 1,
                                     "apply_scale": False}})
    assert c["layer_types"] == ["sliding_attention", "full_attention"] * 2 and c["sliding_window"] == 4096
    assert c["rope_parameters"] == {"rope_type": "yarn", "mscale_all_dim": 1, "rope_theta": 1e6, "factor": 4.0,
                                    "original_max_position_embeddings": 8192, "beta_fast": 32.0, "beta_slow": 1.0,
                                    "attention_factor": 1.0}
    assert c["architectures"] == ["MistralForCausalLM"] and c["max_position_embeddings"] == 128_000
    assert c["hidden_size"] == 8 and c["intermediate_size"] == 16 and c["tie_word_embeddings"] is False


@pytest.mark.parametrize("extra", [{"qk_nope_head_dim": 64},
                                   {"multimodal": {"whisper_model_args": {"encoder_args": {"dim": 8}}}},
                                   {"quantization": {"qformat_weight": "int4"}}])
def test_what_vmemplan_does_not_remap_is_refused(extra):
    with pytest.raises(ModelConfigError):
        config_from_params({**PIXTRAL_PARAMS, **extra})


def test_dtype_inferred_from_the_consolidated_tensors():
    assert common_float_dtype(["BF16", "F8_E4M3"]) == "bfloat16"
    assert common_float_dtype(["BF16", "F16"]) == "float32"
    assert common_float_dtype(["I8"]) is None


@pytest.mark.parametrize("params", [
    {"dim": 8},
    {"dim": 8, "n_layers": "x", "n_heads": 2, "vocab_size": 8, "sliding_window": [4, None]},
    {"dim": 8, "n_layers": 2, "n_heads": 2, "vocab_size": 8, "vision_encoder": 3},
    {"dim": 8, "n_layers": 3, "n_heads": 2, "vocab_size": 8, "sliding_window": [4, "a"]},
    {"dim": 8, "n_layers": 3, "n_heads": 2, "vocab_size": 8, "yarn": {"factor": "abc"}},
])
def test_a_malformed_params_json_is_one_clear_error(tmp_path, params):
    from tests.hostile.conftest import check_contract, cli

    check_contract(cli("size", str(_mistral_dir(tmp_path, params)), "--gpu", "h100"), 4)


def _weights(model: str, tp: int, config_format: str | None) -> tuple[str, int]:
    from vmemplan.api import plan_with_request
    from vmemplan.laws.weights import weight_bytes_per_rank
    from vmemplan.pipeline import graph_context

    flags = {"config_format": config_format} if config_format else {}
    req, _ = plan_with_request(model=model, gpu="h200", tensor_parallel_size=tp, max_model_len=32768,
                               kv_cache_memory=40 * 2**30, **flags)
    wb = weight_bytes_per_rank(req.adapter.weight_tensors(graph_context(req, 0)), model_dtype=req.dtype,
                               scheme=req.quant_scheme, allocator_rounding=False)
    return type(req.adapter).__name__, wb.unrounded_bytes


@pytest.mark.parametrize("tp", [1, 2])
def test_the_bundled_mistral_small_follows_vllm_config_format(tp):
    """mistralai/Mistral-Small-3.1 ships params.json and consolidated.safetensors, so vLLM's default
    (auto) reads params.json: Pixtral, the adapter replicated.  --config-format hf reads config.json:
    Mistral-3.  Each equals vLLM's own figures (the oracle fixtures of the two configs)."""
    side = _side()
    pixtral = side.load(ORACLE / f"mistralai-Mistral-Small-3.1-24B-Instruct-2503.params-remap.derived.tp{tp}.json")
    mistral3 = side.load(ORACLE / f"mistralai-Mistral-Small-3.1-24B-Instruct-2503.tp{tp}.json")
    model = "mistralai/Mistral-Small-3.1-24B-Instruct-2503"
    for fmt in (None, "auto", "mistral"):
        assert _weights(model, tp, fmt) == ("Pixtral", side.oracle_figures(pixtral)["weights_bytes"])
    assert _weights(model, tp, "hf") == ("Mistral3", side.oracle_figures(mistral3)["weights_bytes"])


def test_config_format_mistral_elsewhere_says_what_it_read(tmp_path):
    from vmemplan.core.errors import BadInput
    from vmemplan.sources import load_model_source

    # a bundled copy without a params.json: planned from config.json, and said so
    source = load_model_source("meta-llama/Llama-3.1-8B", allow_hub=False, config_format="mistral")
    assert any("no params.json is bundled" in n for n in source.notes)
    # a local directory without params.json: vLLM would fail, so does vmemplan
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    with pytest.raises(BadInput, match="has no params.json"):
        load_model_source(str(tmp_path), config_format="mistral")
    with pytest.raises(BadInput, match="config-format"):
        load_model_source("meta-llama/Llama-3.1-8B", allow_hub=False, config_format="yaml")


def test_explain_log_links_the_model_in_the_format_the_log_names():
    """explain-log reads a log's non-default ``config_format`` and links the model as vLLM read it."""
    from types import SimpleNamespace

    from vmemplan.explain.model_link import link_model
    from vmemplan.explain.runner import _config_format

    model = "mistralai/Mistral-Small-3.1-24B-Instruct-2503"
    assert type(link_model(model)[0].adapter).__name__ == "Pixtral"
    assert type(link_model(model, config_format="hf")[0].adapter).__name__ == "Mistral3"
    assert _config_format(SimpleNamespace(engine={"non_default_args": {"config_format": "hf"}})) == "hf"
    assert _config_format(SimpleNamespace(engine={"non_default_args": {"model": model}})) == "auto"
    assert _config_format(SimpleNamespace(engine=None)) == "auto"
