"""The bundled registry (registry/models): keys, aliases, provenance, sidecars and revision skipping."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from vmemplan.core.errors import HubUnavailable, RegistryInvalid
from vmemplan.sources import (
    bundled_aliases,
    default_models_dir,
    default_registry_dir,
    list_bundled_models,
    load_model_source,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
MODELS_DIR = REPO_ROOT / "registry" / "models"
CORPUS_DIR = REPO_ROOT.parent / "shared" / "corpus" / "configs"  # shared/ beside the checkout


@pytest.fixture(autouse=True)
def _no_registry_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VMEMPLAN_REGISTRY", raising=False)


def test_default_dir_is_the_checkout_registry() -> None:
    assert default_models_dir() == MODELS_DIR


def test_registry_env_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "acme--tiny.json").write_text('{"hidden_size": 8}')
    monkeypatch.setenv("VMEMPLAN_REGISTRY", str(tmp_path))
    assert default_registry_dir() == tmp_path
    assert list_bundled_models() == ["acme/tiny"]
    assert load_model_source("ACME/TINY", allow_hub=False).config == {"hidden_size": 8}


def test_registry_env_pointing_nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VMEMPLAN_REGISTRY", str(tmp_path / "absent"))
    with pytest.raises(RegistryInvalid):
        default_registry_dir()


def test_bundled_id_is_case_insensitive() -> None:
    source = load_model_source("META-LLAMA/llama-3.1-8b", allow_hub=False)
    assert source.source == "bundled"
    assert source.model_id == "meta-llama/Llama-3.1-8B"  # canonical spelling
    assert source.config["num_hidden_layers"] == 32
    assert source.config["num_key_value_heads"] == 8
    assert source.path == str(MODELS_DIR / "meta-llama--Llama-3.1-8B.json")
    assert source.revision is None
    assert any("fidelity: as-found" in note for note in source.notes)


def test_alias_resolves_to_its_target_and_says_why() -> None:
    source = load_model_source("meta-llama/meta-llama-3.1-8b-instruct", allow_hub=False)
    assert source.source == "bundled"
    assert source.model_id == "meta-llama/Meta-Llama-3.1-8B-Instruct"
    assert source.path == str(MODELS_DIR / "meta-llama--Llama-3.1-8B.json")
    assert "alias of the bundled meta-llama/Llama-3.1-8B" in source.notes[0]


def test_bundled_files_are_byte_identical_to_the_corpus() -> None:
    if not CORPUS_DIR.is_dir():
        pytest.skip("shared corpus not available")
    corpus = sorted(p.name for p in CORPUS_DIR.glob("*.json"))
    # a params.json sidecar is not a corpus file: derived, and said so in provenance.yaml
    bundled = sorted(p.name for p in MODELS_DIR.glob("*.json") if not p.name.endswith(".params.json"))
    assert bundled == corpus
    for name in corpus:
        assert (MODELS_DIR / name).read_bytes() == (CORPUS_DIR / name).read_bytes(), name


def test_list_bundled_models_lists_each_file_once() -> None:
    ids = list_bundled_models()
    assert ids == sorted(ids, key=lambda k: (k.lower(), k))
    assert len(ids) == len(set(ids))
    # 67 JSON files, two of them sidecars (hf_quant_config, params) -> 65 configs.
    assert len(ids) == 65
    assert "meta-llama/Llama-3.1-8B" in ids
    # Trimmed copies: the plain id when it is the only copy, the qualified key otherwise.
    assert "tiiuae/Falcon-H1-0.5B" in ids
    assert "zai-org/GLM-4.5-Air" in ids
    assert "meta-llama/Llama-4-Maverick-17B-128E-Instruct" in ids
    assert "meta-llama/Llama-4-Scout-17B-16E-Instruct" in ids
    assert "meta-llama/Llama-4-Scout-17B-16E-Instruct:aiconfigurator-trimmed" in ids
    # A dot inside the name is part of the name, not a qualifier.
    assert "baidu/ERNIE-Image.text_encoder-Mistral3-3B" in ids
    assert not any("hf_quant_config" in i for i in ids)


def test_trimmed_copy_keying_and_note() -> None:
    plain = load_model_source("meta-llama/Llama-4-Scout-17B-16E-Instruct", allow_hub=False)
    assert plain.path.endswith("meta-llama--Llama-4-Scout-17B-16E-Instruct.json")
    trimmed = load_model_source("meta-llama/Llama-4-Scout-17B-16E-Instruct:aiconfigurator-trimmed", allow_hub=False)
    assert trimmed.path.endswith(".aiconfigurator-trimmed.json")
    assert trimmed.config["text_config"]["rope_scaling"]["factor"] == 16.0  # the newer Hub revision
    only = load_model_source("tiiuae/falcon-h1-0.5b", allow_hub=False)
    assert only.model_id == "tiiuae/Falcon-H1-0.5B"
    assert only.path.endswith(".megatron-bridge-trimmed.json")
    assert "not the complete Hub file" in only.notes[0]
    assert "fidelity: trimmed" in only.notes[0]


def test_sidecar_travels_with_its_model() -> None:
    source = load_model_source("nvidia/Llama-3.1-70B-Instruct-FP8", allow_hub=False)
    assert "quantization_config" not in source.config
    assert source.extra["hf_quant_config.json"]["quantization"]["quant_algo"] == "FP8"
    assert source.extra["hf_quant_config.json"]["quantization"]["kv_cache_quant_algo"] == "FP8"


def test_every_bundled_file_has_provenance_and_vice_versa() -> None:
    provenance = yaml.safe_load((MODELS_DIR / "provenance.yaml").read_text())["files"]
    files = {p.name for p in MODELS_DIR.glob("*.json")}
    assert set(provenance) == files
    allowed = {"verified", "hash-verified", "as-found", "rebuilt", "modified", "trimmed", "reserialized"}
    for name, record in provenance.items():
        assert record["fidelity"] in allowed, name
        assert record["origin"], name
    for name in files:
        if "trimmed" in name:
            assert provenance[name]["fidelity"] == "trimmed", name


def test_aliases_point_at_bundled_ids_never_shadow_them_and_cite_a_source() -> None:
    raw = yaml.safe_load((MODELS_DIR / "aliases.yaml").read_text())["aliases"]
    bundled = {i.lower() for i in list_bundled_models()}
    assert raw, "aliases.yaml is empty"
    for alias, body in raw.items():
        assert body["target"].lower() in bundled, alias
        assert alias.lower() not in bundled, alias
        assert len(body["source"].split()) >= 5, alias
    assert bundled_aliases()["meta-llama/Llama-3.1-8B-Instruct"] == "meta-llama/Llama-3.1-8B"
    # Not identical in every dimension (max_position_embeddings 32768 vs 131072): must not be aliased.
    assert "qwen/qwen2.5-7b-instruct" not in {a.lower() for a in raw}


def test_every_bundled_and_aliased_id_loads() -> None:
    for model_id in list_bundled_models() + list(bundled_aliases()):
        source = load_model_source(model_id, allow_hub=False)
        assert source.source == "bundled"
        assert isinstance(source.config, dict) and source.config


def test_alias_to_a_missing_target_is_a_registry_error(tmp_path: Path) -> None:
    (tmp_path / "acme--real.json").write_text("{}")
    (tmp_path / "aliases.yaml").write_text("aliases:\n  acme/other:\n    target: acme/absent\n    source: because\n")
    with pytest.raises(RegistryInvalid):
        load_model_source("acme/other", bundled_dir=tmp_path, allow_hub=False)


def test_badly_named_bundled_file_is_a_registry_error(tmp_path: Path) -> None:
    (tmp_path / "no-separator.json").write_text("{}")
    with pytest.raises(RegistryInvalid):
        list_bundled_models(tmp_path)


def test_malformed_bundled_json_is_reported(tmp_path: Path) -> None:
    (tmp_path / "acme--broken.json").write_text('{"a": 1,}')
    with pytest.raises(Exception) as caught:
        load_model_source("acme/broken", bundled_dir=tmp_path, allow_hub=False)
    assert "is not valid JSON: line 1 column 9" in str(caught.value)  # the "}" after the trailing comma


def test_revision_skips_the_bundled_copy_and_says_so(tmp_path: Path, hf_env: Path, populate_cache) -> None:
    # Without a cached or Hub copy, a pinned revision cannot be served from the bundle.
    with pytest.raises(HubUnavailable):
        load_model_source("meta-llama/Llama-3.1-8B", revision="main", allow_hub=False)
    populate_cache("meta-llama/Llama-3.1-8B", {"config.json": b'{"num_hidden_layers": 3}'}, ref="v9")
    source = load_model_source("meta-llama/Llama-3.1-8B", revision="v9", allow_hub=False)
    assert source.source == "hf-cache"
    assert source.config == {"num_hidden_layers": 3}
    assert "skipped the bundled copy of meta-llama/Llama-3.1-8B" in source.notes[0]


def test_local_copy_of_registry_is_usable(tmp_path: Path) -> None:
    target = tmp_path / "models"
    shutil.copytree(MODELS_DIR, target)
    assert list_bundled_models(target) == list_bundled_models()
    data = load_model_source("openai/gpt-oss-20b", bundled_dir=target, allow_hub=False).config
    assert data == json.loads((MODELS_DIR / "openai--gpt-oss-20b.json").read_text())


def test_pinned_revision_offline_explains_the_bundle_is_skipped(hf_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubUnavailable) as caught:
        load_model_source("openai/gpt-oss-20b", revision="main")
    assert "never served from the bundled copy" in caught.value.hint
    with pytest.raises(HubUnavailable, match="revision main of openai/gpt-oss-20b is not in your Hugging Face cache"):
        load_model_source("openai/gpt-oss-20b", revision="main", allow_hub=False)
