"""Issue 15: files that are not what they claim (FIFOs, devices, huge, deep, unsearchable)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from pathlib import Path

from tests.hostile.conftest import check_contract, cli, model_json, write_config


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "config.json"
    os.mkfifo(path)
    return path


def test_fifo_config_is_refused_not_opened(fifo):
    run = cli("size", str(fifo), "--gpu", "h100")
    check_contract(run, 4)
    assert "not a regular file" in run.stderr


def test_fifo_in_model_dir_is_refused(fifo):
    run = cli("size", str(fifo.parent), "--gpu", "h100")
    check_contract(run, 4)


def test_fifo_log_is_refused(tmp_path):
    path = tmp_path / "server.log"
    os.mkfifo(path)
    check_contract(cli("explain-log", str(path)), 4)


def test_fifo_safetensors_is_skipped(tmp_path):
    write_config(tmp_path, model_json("meta-llama--Llama-3.1-8B.json"))
    os.mkfifo(tmp_path / "model.safetensors")
    run = cli("size", str(tmp_path), "--gpu", "h100", "--format", "json")
    assert run.code == 0, run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("args", [
    ["size", "/dev/zero", "--gpu", "h100"],
    ["explain-log", "/dev/zero"],
])
def test_dev_zero_is_refused(args):
    check_contract(cli(*args), 4)


def test_symlink_to_dev_zero_is_refused(tmp_path):
    (tmp_path / "config.json").symlink_to("/dev/zero")
    check_contract(cli("size", str(tmp_path), "--gpu", "h100"), 4)


def test_stdin_log_is_bounded():
    with open("/dev/zero", "rb") as zero:
        run = cli("explain-log", "-", stdin=zero.fileno())
    check_contract(run, 4)


def test_oversized_config_is_refused(tmp_path):
    path = tmp_path / "config.json"
    with path.open("wb") as fh:  # sparse: 40 MiB of nothing
        fh.truncate(40 << 20)
    check_contract(cli("size", str(path), "--gpu", "h100"), 4)


def test_five_thousand_digit_integer(tmp_path):
    text = json.dumps(model_json("meta-llama--Llama-3.1-8B.json"))[:-1] + ', "hidden_size": ' + "9" * 5000 + "}"
    run = cli("size", str(write_config(tmp_path, text)), "--gpu", "h100")
    check_contract(run, 4)


def test_five_thousand_digit_quantize_config(tmp_path):
    write_config(tmp_path, model_json("meta-llama--Llama-3.1-8B.json"))
    write_config(tmp_path, '{"bits": ' + "4" * 5000 + ', "group_size": 128}', "quantize_config.json")
    check_contract(cli("size", str(tmp_path), "--gpu", "h100"), 4)


def test_deep_nesting(tmp_path):
    text = '{"text_config": ' + "[" * 20000 + "]" * 20000 + ', "hidden_size": 1}'
    check_contract(cli("size", str(write_config(tmp_path, text)), "--gpu", "h100"), 4)


def test_deep_nesting_in_quant_config(tmp_path):
    write_config(tmp_path, model_json("meta-llama--Llama-3.1-8B.json"))
    write_config(tmp_path, '{"q": ' + "[" * 20000 + "]" * 20000 + "}", "hf_quant_config.json")
    check_contract(cli("size", str(tmp_path), "--gpu", "h100"), 4)


def test_deep_safetensors_index_is_skipped(tmp_path):
    write_config(tmp_path, model_json("meta-llama--Llama-3.1-8B.json"))
    (tmp_path / "model.safetensors").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    write_config(tmp_path, '{"weight_map": ' + "[" * 20000 + "]" * 20000 + "}", "model.safetensors.index.json")
    run = cli("size", str(tmp_path), "--gpu", "h100", "--format", "json")
    assert run.code == 0 and "Traceback" not in run.stderr, run.stderr


def test_deep_safetensors_header_is_skipped(tmp_path):
    write_config(tmp_path, model_json("meta-llama--Llama-3.1-8B.json"))
    header = b"[" * 20000 + b"]" * 20000
    (tmp_path / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)
    run = cli("size", str(tmp_path), "--gpu", "h100", "--format", "json")
    assert run.code == 0 and "Traceback" not in run.stderr, run.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permissions")
def test_unsearchable_directory(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    write_config(model_dir, model_json("meta-llama--Llama-3.1-8B.json"))
    model_dir.chmod(stat.S_IRUSR)  # readable listing, no search permission
    try:
        check_contract(cli("size", str(model_dir), "--gpu", "h100"), 4)
    finally:
        model_dir.chmod(stat.S_IRWXU)


def test_model_id_longer_than_255_characters():
    check_contract(cli("size", "org/" + "m" * 300, "--gpu", "h100"), 4)


def test_escape_sequences_in_config_strings_never_reach_the_terminal(tmp_path):
    config = model_json("meta-llama--Llama-3.1-8B.json")
    config["architectures"] = ["Evil\x1b]0;pwned\x07\x1b[2J"]
    run = cli("size", str(write_config(tmp_path, config)), "--gpu", "h100")
    check_contract(run, 4)
    assert "\x1b" not in run.stdout and "\x07" not in run.stdout


def test_yaml_alias_bomb_in_log_header(tmp_path):
    lines = ["---", 'a: &a ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 12):
        lines.append(f"{chr(97 + i)}: &{chr(97 + i)} [*{chr(96 + i)},*{chr(96 + i)},*{chr(96 + i)},"
                     f"*{chr(96 + i)},*{chr(96 + i)},*{chr(96 + i)},*{chr(96 + i)},*{chr(96 + i)},*{chr(96 + i)}]")
    lines += ["---", "INFO 01-01 00:00:00 [core.py:1] hello"]
    path = tmp_path / "bomb.log"
    path.write_text("\n".join(lines) + "\n")
    run = cli("explain-log", str(path))
    assert run.code in (4,), run.stderr
    check_contract(run, 4)


LOG = Path(__file__).resolve().parent / "fixtures" / "qwen2-7b-no-header.log"  # corpus log 001, no header


@pytest.mark.parametrize("replacement", ["/dev/zero", "FIFO"])
def test_log_naming_a_device_or_fifo_as_its_model(tmp_path, replacement):
    if replacement == "FIFO":
        replacement = str(tmp_path / "model")
        os.mkfifo(replacement)
    log = tmp_path / "server.log"
    log.write_text(LOG.read_text().replace("model='Qwen2-7B-Instruct'", f"model='{replacement}'"))
    run = cli("explain-log", str(log), "--online")
    assert run.code in (0, 4), run.stderr
    assert "Traceback" not in run.stderr


def test_log_with_a_five_thousand_digit_version(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(LOG.read_text().replace("(v0.10.1.1)", "(v0." + "9" * 5000 + ")"))
    run = cli("explain-log", str(log))
    assert run.code in (0, 4), run.stderr
    assert "Traceback" not in run.stderr


def test_vllm_version_flag_with_five_thousand_digits():
    run = cli("explain-log", str(LOG), "--vllm-version", "0." + "9" * 5000)
    assert run.code in (2, 4), run.stderr
    check_contract(run, run.code)


def test_escape_sequences_in_a_directory_name_never_reach_the_terminal(tmp_path):
    model_dir = tmp_path / "evil\x1b]0;pwned\x07\x1b[2Jdir"
    model_dir.mkdir()
    write_config(model_dir, model_json("meta-llama--Llama-3.1-8B.json"))
    for fmt in ("table", "tree", "json", "log"):
        run = cli("size", str(model_dir), "--gpu", "h100", "--format", fmt)
        assert run.code == 0, run.stderr
        assert "\x1b" not in run.stdout and "\x07" not in run.stdout, fmt


@pytest.mark.parametrize("ref", ["m" * 300, "/" + "x" * 5000, "a/" + "x/" * 2000, "./" + "y" * 300 + ".json"])
def test_overlong_references(ref):
    run = cli("size", ref, "--gpu", "h100")
    check_contract(run, 4)
    assert len(run.stderr) < 1000  # the reference is not echoed whole


def test_overlong_log_path():
    check_contract(cli("explain-log", "/tmp/" + "z" * 300), 4)


def test_fifo_in_the_registry_is_a_registry_error(tmp_path):
    import shutil

    from tests.hostile.conftest import REPO

    root = tmp_path / "registry"
    shutil.copytree(REPO / "registry", root)
    (root / "gpus.yaml").unlink()
    os.mkfifo(root / "gpus.yaml")
    check_contract(cli("gpus", env={"VMEMPLAN_REGISTRY": str(root)}), 5)


def test_gpu_completion_never_blocks_on_a_fifo(tmp_path, monkeypatch):
    import shutil

    from tests.hostile.conftest import REPO
    from vmemplan.cli._common import gpu_completion

    root = tmp_path / "registry"
    shutil.copytree(REPO / "registry", root)
    (root / "gpus.yaml").unlink()
    os.mkfifo(root / "gpus.yaml")
    monkeypatch.setenv("VMEMPLAN_REGISTRY", str(root))
    monkeypatch.setenv("VMEMPLAN_NO_CACHE", "1")
    assert gpu_completion("h1") == []
