"""Local paths: config.json files, model directories and their errors (no network, no HF cache)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmemplan.core.errors import BadInput, ExitCode, ModelConfigError
from vmemplan.sources import load_model_source

TINY_CONFIG = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2}


def write_config(directory: Path, config: object = TINY_CONFIG, name: str = "config.json") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(json.dumps(config))
    return path


def test_local_file(tmp_path: Path) -> None:
    path = write_config(tmp_path / "m")
    source = load_model_source(str(path), allow_hub=False)
    assert source.source == "local"
    assert source.config == TINY_CONFIG
    assert source.path == str(path.resolve())
    assert source.revision is None
    assert source.extra == {}
    assert source.safetensors_params is None


def test_local_directory(tmp_path: Path) -> None:
    write_config(tmp_path / "model")
    source = load_model_source(str(tmp_path / "model"), allow_hub=False)
    assert source.source == "local"
    assert source.config["hidden_size"] == 64
    assert source.path == str((tmp_path / "model" / "config.json").resolve())


def test_relative_id_like_directory_is_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "org/name" that exists under the working directory is a local model, not a Hub id.
    write_config(tmp_path / "meta-llama" / "Llama-3.1-8B", {"hidden_size": 7})
    monkeypatch.chdir(tmp_path)
    source = load_model_source("meta-llama/Llama-3.1-8B", allow_hub=False)
    assert source.source == "local"
    assert source.config == {"hidden_size": 7}


def test_home_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    write_config(tmp_path / "models" / "x")
    source = load_model_source("~/models/x", allow_hub=False)
    assert source.source == "local"


def test_malformed_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    # Line 3 ends after the colon; the first token that is not a value is "}" at line 4, column 1.
    path.write_text('{\n  "a": 1,\n  "b": \n}\n')
    with pytest.raises(ModelConfigError) as caught:
        load_model_source(str(path), allow_hub=False)
    assert f"config.json at {path} is not valid JSON: line 4 column 1" in caught.value.message
    assert caught.value.exit_code == ExitCode.BAD_INPUT


@pytest.mark.parametrize(
    ("payload", "kind"), [("[1, 2]", "array"), ('"x"', "string"), ("3", "number"), ("null", "null")]
)
def test_json_that_is_not_an_object(tmp_path: Path, payload: str, kind: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(payload)
    with pytest.raises(ModelConfigError) as caught:
        load_model_source(str(path), allow_hub=False)
    assert "is not a JSON object" in caught.value.message
    assert kind in caught.value.message


def test_infinity_token_is_accepted(tmp_path: Path) -> None:
    # Nemotron-H's published config carries "time_step_limit": [0.0, Infinity].
    path = tmp_path / "config.json"
    path.write_text('{"time_step_limit": [0.0, Infinity]}')
    assert load_model_source(str(path), allow_hub=False).config["time_step_limit"][1] == float("inf")


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(ModelConfigError, match="not UTF-8"):
        load_model_source(str(path), allow_hub=False)


@pytest.mark.parametrize(
    "ref", ["/definitely/not/here", "./nope", "../nope/config.json", "~/no-such-dir-xyz", "missing.json"]
)
def test_missing_path_like_reference(ref: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadInput) as caught:
        load_model_source(ref, allow_hub=False)
    assert ref in caught.value.message
    assert caught.value.exit_code == ExitCode.BAD_INPUT
    assert not isinstance(caught.value, ModelConfigError)


def test_directory_without_config(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match=r"without a config\.json"):
        load_model_source(str(tmp_path / "empty"), allow_hub=False)


def test_local_extras_and_safetensors(tmp_path: Path, st_bytes) -> None:
    model = tmp_path / "model"
    write_config(model)
    (model / "hf_quant_config.json").write_text(json.dumps({"quantization": {"quant_algo": "FP8"}}))
    (model / "quantize_config.json").write_text(json.dumps({"bits": 4}))
    # BF16: 4*8 = 32 parameters; F32: 3 (vector) + 1 (scalar) = 4 parameters.
    (model / "model.safetensors").write_bytes(st_bytes({"w": ("BF16", [4, 8]), "b": ("F32", [3]), "s": ("F32", [])}))
    source = load_model_source(str(model), allow_hub=False)
    assert source.extra == {
        "hf_quant_config.json": {"quantization": {"quant_algo": "FP8"}},
        "quantize_config.json": {"bits": 4},
    }
    assert source.safetensors_params == {"BF16": 32, "F32": 4}


def test_sharded_local_safetensors(tmp_path: Path, st_bytes) -> None:
    model = tmp_path / "model"
    write_config(model)
    (model / "model-00001-of-00002.safetensors").write_bytes(st_bytes({"a": ("BF16", [10, 10])}))
    (model / "model-00002-of-00002.safetensors").write_bytes(st_bytes({"b": ("BF16", [5]), "c": ("F8_E4M3", [2, 3])}))
    index = {
        "weight_map": {
            "a": "model-00001-of-00002.safetensors",
            "b": "model-00002-of-00002.safetensors",
            "c": "model-00002-of-00002.safetensors",
        }
    }
    (model / "model.safetensors.index.json").write_text(json.dumps(index))
    # BF16: 10*10 + 5 = 105; F8_E4M3: 2*3 = 6.
    assert load_model_source(str(model), allow_hub=False).safetensors_params == {"BF16": 105, "F8_E4M3": 6}


def test_missing_shard_skips_counts_with_a_note(tmp_path: Path, st_bytes) -> None:
    model = tmp_path / "model"
    write_config(model)
    (model / "model-00001-of-00002.safetensors").write_bytes(st_bytes({"a": ("BF16", [2])}))
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
    (model / "model.safetensors.index.json").write_text(json.dumps(index))
    source = load_model_source(str(model), allow_hub=False)
    assert source.safetensors_params is None
    assert any("1 of 2 shards" in note for note in source.notes)


def test_corrupt_safetensors_header_is_not_fatal(tmp_path: Path) -> None:
    model = tmp_path / "model"
    write_config(model)
    (model / "model.safetensors").write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{oops")
    source = load_model_source(str(model), allow_hub=False)
    assert source.safetensors_params is None
    assert any("cannot read the header" in note for note in source.notes)


def test_a_lone_json_file_does_not_pull_in_siblings(tmp_path: Path) -> None:
    path = write_config(tmp_path, name="my-model.json")
    (tmp_path / "hf_quant_config.json").write_text("{}")
    assert load_model_source(str(path), allow_hub=False).extra == {}


def test_revision_is_ignored_for_a_local_path_with_a_note(tmp_path: Path) -> None:
    path = write_config(tmp_path / "m")
    source = load_model_source(str(path), revision="v2", allow_hub=False)
    assert source.revision is None
    assert any("revision v2 ignored" in note for note in source.notes)


def test_model_id_is_the_normalised_path(tmp_path: Path) -> None:
    write_config(tmp_path / "m")
    ref = str(tmp_path / "m") + os.sep + "." + os.sep
    assert load_model_source(ref, allow_hub=False).model_id == str(tmp_path / "m")


@settings(max_examples=40, deadline=None)
@given(
    tensors=st.dictionaries(
        keys=st.text(alphabet="abcdefgh.", min_size=1, max_size=8),
        values=st.tuples(st.sampled_from(["BF16", "F32", "F8_E4M3", "I64"]), st.lists(st.integers(0, 6), max_size=3)),
        max_size=6,
    )
)
def test_safetensors_counts_are_the_shape_products_per_dtype(tensors, tmp_path_factory, st_bytes) -> None:
    # Law: parameters of a dtype = sum over its tensors of the product of the shape (1 for a scalar).
    model = tmp_path_factory.mktemp("st")
    write_config(model)
    (model / "model.safetensors").write_bytes(st_bytes({k: (d, list(s)) for k, (d, s) in tensors.items()}))
    expected: dict[str, int] = {}
    for dtype, shape in tensors.values():
        product = 1
        for dim in shape:
            product *= dim
        expected[dtype] = expected.get(dtype, 0) + product
    assert load_model_source(str(model), allow_hub=False).safetensors_params == expected
