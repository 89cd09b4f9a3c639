"""The HF cache and the Hub tiers, against a fake Hub on 127.0.0.1 (never the network)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from vmemplan.core.errors import BadInput, ExitCode, HubUnavailable, ModelConfigError, VmemplanError
from vmemplan.sources import ModelSource, load_model_source

SOURCES_PY = Path(__file__).resolve().parents[2] / "vmemplan" / "sources.py"
CONFIG = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2}


def cfg(**changes: object) -> bytes:
    return json.dumps({**CONFIG, **changes}).encode()


def everything_said(error: BaseException) -> str:
    """Message, hint, str and repr of an error and of every exception chained to it."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    pending = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        parts += [str(current), repr(current), str(getattr(current, "hint", "")), repr(current.args)]
        pending += [current.__cause__, current.__context__]
    return "\n".join(parts)


# ------------------------------------------------------------------------------------- HF cache


def test_cache_hit_offline(hf_env: Path, populate_cache, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    sha = "a" * 40
    snapshot = populate_cache("acme/cached", {"config.json": cfg(), "hf_quant_config.json": b'{"q": 1}'}, commit=sha)
    source = load_model_source("acme/cached")
    assert source.source == "hf-cache"
    assert source.config == CONFIG
    assert source.revision == sha
    assert source.path == str(snapshot / "config.json")
    assert source.extra == {"hf_quant_config.json": {"q": 1}}


def test_cache_honours_hf_hub_cache(tmp_path: Path, hf_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "elsewhere"
    monkeypatch.setenv("HF_HUB_CACHE", str(other))
    repo = other / "models--acme--elsewhere"
    (repo / "snapshots" / ("b" * 40)).mkdir(parents=True)
    (repo / "snapshots" / ("b" * 40) / "config.json").write_bytes(cfg(hidden_size=5))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("b" * 40)
    assert load_model_source("acme/elsewhere", allow_hub=False).config["hidden_size"] == 5


def test_cache_is_used_before_the_hub(fake_hub, populate_cache) -> None:
    fake_hub.add_repo("acme/both", {"main": {"config.json": cfg(hidden_size=999)}})
    populate_cache("acme/both", {"config.json": cfg(hidden_size=1)})
    source = load_model_source("acme/both")
    assert (source.source, source.config["hidden_size"]) == ("hf-cache", 1)
    assert fake_hub.requests == []


def test_cached_safetensors_are_counted(hf_env: Path, populate_cache, st_bytes) -> None:
    # F32: 2*3 = 6 parameters.
    populate_cache("acme/st", {"config.json": cfg(), "model.safetensors": st_bytes({"w": ("F32", [2, 3])})})
    assert load_model_source("acme/st", allow_hub=False).safetensors_params == {"F32": 6}


def test_offline_without_cache(hf_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubUnavailable) as caught:
        load_model_source("acme/nowhere")
    assert caught.value.exit_code == ExitCode.HUB_UNAVAILABLE
    assert "HF_HUB_OFFLINE" in caught.value.message
    assert caught.value.hint.endswith(
        "it is not bundled and not in your Hugging Face cache; run once online or pass a local config.json"
    )


def test_offline_suggests_a_close_bundled_id(hf_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubUnavailable) as caught:
        load_model_source("meta-llama/Llama-3.1-8")
    assert "did you mean meta-llama/Llama-3.1-8B" in caught.value.hint


def test_allow_hub_false_without_cache(fake_hub) -> None:
    fake_hub.add_repo("acme/online", {"main": {"config.json": cfg()}})
    with pytest.raises(HubUnavailable, match="Hub access is off"):
        load_model_source("acme/online", allow_hub=False)
    assert fake_hub.requests == []


def test_invalid_hub_id(hf_env: Path) -> None:
    with pytest.raises(BadInput, match="neither an existing path nor a valid Hugging Face model id"):
        load_model_source("not a/valid/id", allow_hub=False)


# ------------------------------------------------------------------------------------------ Hub


def test_hub_download_lands_in_the_hf_cache(fake_hub, hf_env: Path) -> None:
    repo = fake_hub.add_repo("acme/tiny", {"main": {"config.json": cfg()}})
    spinner_texts: list[str] = []

    @contextmanager
    def progress(text: str):
        spinner_texts.append(text)
        yield

    source = load_model_source("acme/tiny", progress=progress)
    assert source.source == "hub"
    assert source.config == CONFIG
    commit = repo.refs["main"]
    assert source.revision == commit
    expected = hf_env / "hub" / "models--acme--tiny" / "snapshots" / commit / "config.json"
    assert source.path == str(expected)
    assert expected.is_file()
    assert (hf_env / "hub" / "models--acme--tiny" / "refs" / "main").read_text() == commit
    assert spinner_texts[0] == "Fetching config.json from the Hugging Face Hub…"
    assert source.extra == {}  # hf_quant_config.json is absent (a 404 is fine)
    assert any("no safetensors weights" in n for n in source.notes)
    # A second call is served from the cache with no request.
    before = len(fake_hub.requests)
    assert load_model_source("acme/tiny").source == "hf-cache"
    assert len(fake_hub.requests) == before


def test_hub_revision(fake_hub) -> None:
    repo = fake_hub.add_repo(
        "acme/versions",
        {"main": {"config.json": cfg(num_hidden_layers=2)}, "v2": {"config.json": cfg(num_hidden_layers=4)}},
    )
    source = load_model_source("acme/versions", revision="v2")
    assert source.config["num_hidden_layers"] == 4
    assert source.revision == repo.refs["v2"]
    main = load_model_source("acme/versions")
    assert main.config["num_hidden_layers"] == 2


def test_hub_missing_revision(fake_hub) -> None:
    fake_hub.add_repo("acme/versions", {"main": {"config.json": cfg()}})
    with pytest.raises(HubUnavailable, match="revision nope of acme/versions was not found"):
        load_model_source("acme/versions", revision="nope")


def test_hub_gated_repo(fake_hub) -> None:
    fake_hub.add_repo("acme/locked", {"main": {"config.json": cfg()}}, gated=True)
    with pytest.raises(HubUnavailable) as caught:
        load_model_source("acme/locked")
    assert "gated" in caught.value.message
    assert "hf auth login" in caught.value.hint and "HF_TOKEN" in caught.value.hint
    assert "licence" in caught.value.hint


def test_hub_missing_repo(fake_hub) -> None:
    with pytest.raises(HubUnavailable) as caught:
        load_model_source("acme/ghost")
    assert "acme/ghost was not found on the Hugging Face Hub" in caught.value.message
    assert caught.value.exit_code == ExitCode.HUB_UNAVAILABLE


def test_hub_missing_repo_suggests_a_bundled_id(fake_hub) -> None:
    with pytest.raises(HubUnavailable) as caught:
        load_model_source("openai/gpt-oss-20")
    assert caught.value.hint == "did you mean openai/gpt-oss-20b (bundled)?"


def test_hub_repo_without_config(fake_hub) -> None:
    fake_hub.add_repo("acme/gguf-only", {"main": {"model.gguf": b"GGUF"}})
    with pytest.raises(HubUnavailable, match=r"has no config\.json"):
        load_model_source("acme/gguf-only")


def test_hub_config_that_is_not_json(fake_hub) -> None:
    fake_hub.add_repo("acme/broken", {"main": {"config.json": b"{nope"}})
    with pytest.raises(ModelConfigError, match=r"is not valid JSON: line 1 column 2"):
        load_model_source("acme/broken")


def test_hub_unreachable(hf_env: Path, closed_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    endpoint = f"http://127.0.0.1:{closed_port}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    with pytest.raises(HubUnavailable) as caught:
        load_model_source("acme/tiny")
    assert "cannot reach the Hugging Face Hub" in caught.value.message
    assert "run once online" in caught.value.hint


def test_hub_safetensors_counts_single_file(fake_hub, st_bytes) -> None:
    weights = st_bytes({"embed": ("BF16", [16, 4]), "norm": ("F32", [4]), "scale": ("F32", [])})
    fake_hub.add_repo("acme/weights", {"main": {"config.json": cfg(), "model.safetensors": weights}})
    source = load_model_source("acme/weights")
    # BF16: 16*4 = 64; F32: 4 + 1 (scalar) = 5.
    assert source.safetensors_params == {"BF16": 64, "F32": 5}
    # Only the header was read: every GET of the weights asked for a byte range, and no weight file
    # landed in the cache.
    weight_gets = [r for r in fake_hub.requests if r[0] == "GET" and r[1].startswith("/cdn/")]
    assert weight_gets and all(r[3] is not None and r[3].startswith("bytes=") for r in weight_gets)
    assert not list((Path(source.path).parent).glob("*.safetensors"))


def test_hub_safetensors_counts_sharded(fake_hub, st_bytes) -> None:
    shard1 = st_bytes({"a": ("BF16", [8, 8])})
    shard2 = st_bytes({"b": ("BF16", [8]), "c": ("F8_E4M3", [4, 4])})
    index = {
        "metadata": {"total_size": 0},
        "weight_map": {
            "a": "model-00001-of-00002.safetensors",
            "b": "model-00002-of-00002.safetensors",
            "c": "model-00002-of-00002.safetensors",
        },
    }
    fake_hub.add_repo(
        "acme/sharded",
        {
            "main": {
                "config.json": cfg(),
                "model.safetensors.index.json": json.dumps(index).encode(),
                "model-00001-of-00002.safetensors": shard1,
                "model-00002-of-00002.safetensors": shard2,
            }
        },
    )
    # BF16: 8*8 + 8 = 72; F8_E4M3: 4*4 = 16.
    assert load_model_source("acme/sharded").safetensors_params == {"BF16": 72, "F8_E4M3": 16}


def test_hub_fetches_hf_quant_config_when_config_has_no_quantization_config(fake_hub) -> None:
    fake_hub.add_repo(
        "acme/modelopt",
        {"main": {"config.json": cfg(), "hf_quant_config.json": b'{"quantization": {"quant_algo": "FP8"}}'}},
    )
    source = load_model_source("acme/modelopt")
    assert source.extra == {"hf_quant_config.json": {"quantization": {"quant_algo": "FP8"}}}


def test_hub_skips_hf_quant_config_when_config_is_quantized(fake_hub) -> None:
    # vLLM ignores hf_quant_config.json when config.json has quantization_config (get_config, 0.33.0).
    fake_hub.add_repo(
        "acme/fp8",
        {"main": {"config.json": cfg(quantization_config={"quant_method": "fp8"}), "hf_quant_config.json": b"{}"}},
    )
    source = load_model_source("acme/fp8")
    assert source.extra == {}
    assert not any("hf_quant_config.json" in path for path in fake_hub.paths_requested())


def test_token_is_sent_but_never_shown(fake_hub, sentinel_token: str) -> None:
    fake_hub.add_repo("acme/private", {"main": {"config.json": cfg()}})
    source = load_model_source("acme/private", token=sentinel_token)
    assert f"Bearer {sentinel_token}" in fake_hub.authorizations()
    assert sentinel_token not in repr(source)
    assert not any(sentinel_token in note for note in source.notes)


@pytest.mark.parametrize("via", ["argument", "HF_TOKEN"])
def test_token_never_appears_in_errors(fake_hub, sentinel_token: str, via: str, monkeypatch) -> None:
    # The fake Hub echoes the credential back in X-Error-Message, like a careless proxy could.
    fake_hub.add_repo("acme/locked", {"main": {"config.json": cfg()}}, gated=True)
    kwargs = {"token": sentinel_token} if via == "argument" else {}
    if via == "HF_TOKEN":
        monkeypatch.setenv("HF_TOKEN", sentinel_token)
    with pytest.raises(VmemplanError) as caught:
        load_model_source("acme/locked", **kwargs)
    assert f"Bearer {sentinel_token}" in fake_hub.authorizations()  # it was used
    text = everything_said(caught.value)
    assert sentinel_token not in text
    assert "SENTINEL" not in text


def test_token_never_appears_in_notes_of_failed_optional_calls(fake_hub, sentinel_token: str, st_bytes) -> None:
    fake_hub.add_repo("acme/private", {"main": {"config.json": cfg(), "model.safetensors": b"\x00" * 4}})
    source = load_model_source("acme/private", token=sentinel_token)
    assert source.safetensors_params is None  # a 4-byte file is no safetensors file
    assert any("no safetensors parameter counts" in note for note in source.notes)
    assert sentinel_token not in repr(source) + "".join(source.notes)


def test_auto_map_is_never_executed(fake_hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "PWNED"
    evil_code = f"open({str(marker)!r}, 'w').write('code from the repo ran')\n".encode()
    config = cfg(
        architectures=["EvilForCausalLM"],
        auto_map={"AutoConfig": "evil_config.EvilConfig", "AutoModelForCausalLM": "evil_model.EvilModel"},
    )
    fake_hub.add_repo(
        "evil/auto-map",
        {"main": {"config.json": config, "evil_config.py": evil_code, "evil_model.py": evil_code}},
    )
    monkeypatch.syspath_prepend(str(tmp_path))  # even an importable path would not tempt it
    source = load_model_source("evil/auto-map")
    assert source.config["auto_map"]["AutoConfig"] == "evil_config.EvilConfig"
    assert not marker.exists()
    assert not any(path.endswith(".py") for path in fake_hub.paths_requested())
    cache = Path(source.path).parents[3]
    assert not list(cache.rglob("*.py"))
    assert "evil_config" not in sys.modules
    assert any("never runs it" in note for note in source.notes)


def test_model_source_is_frozen(fake_hub) -> None:
    fake_hub.add_repo("acme/tiny", {"main": {"config.json": cfg()}})
    source = load_model_source("acme/tiny")
    assert isinstance(source, ModelSource)
    with pytest.raises(AttributeError):
        source.source = "local"  # type: ignore[misc]


# ------------------------------------------------------------------------------- module hygiene


def test_importing_sources_does_not_import_huggingface_hub() -> None:
    code = "import sys, vmemplan.sources; print('huggingface_hub' in sys.modules, 'yaml' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "False"]


def test_sources_never_executes_or_trusts_remote_code() -> None:
    tree = ast.parse(SOURCES_PY.read_text())
    calls = [node.func for node in ast.walk(tree) if isinstance(node, ast.Call)]
    builtins_called = {f.id for f in calls if isinstance(f, ast.Name)}
    methods_called = {f.attr for f in calls if isinstance(f, ast.Attribute)}
    assert not builtins_called & {"exec", "eval", "compile"}
    assert not methods_called & {"import_module", "run_path", "run_module", "snapshot_download", "exec_module"}
    keywords = {kw.arg for node in ast.walk(tree) if isinstance(node, ast.Call) for kw in node.keywords}
    assert "trust_remote_code" not in keywords
    assert "local_dir" not in keywords  # downloads go to the HF cache only
