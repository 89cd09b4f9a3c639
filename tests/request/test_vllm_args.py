"""The vLLM command parser: vLLM's own syntax, value parsers and errors (vLLM 0.33.0)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmemplan.core.errors import ExitCode, UsageError
from vmemplan.request.vllm_args import (
    human_readable_int, human_readable_int_or_auto, load_config_file, parse_non_default_args, parse_vllm_command,
)


@pytest.mark.parametrize(("text", "value"), [
    ("32k", 32_000), ("32K", 32_768), ("25.6k", 25_600), ("1m", 1_000_000), ("1M", 1 << 20),
    ("2g", 2_000_000_000), ("2G", 2 << 30), ("8192", 8192), (" 4096 ", 4096),
])
def test_human_readable_int_as_vllm_reads_it(text, value):
    """vllm/utils/argparse_utils.py::human_readable_int: lower case decimal, upper case binary."""
    assert human_readable_int(text) == value


@pytest.mark.parametrize("text", ["auto", "AUTO", "-1"])
def test_auto_is_minus_one(text):
    assert human_readable_int_or_auto(text) == -1


def test_decimals_with_binary_suffixes_are_refused_as_vllm_does():
    with pytest.raises(ValueError, match=r"Decimals are not allowed with binary suffixes like K\. "
                                         r"Did you mean to use 1\.5k instead\?"):
        human_readable_int("1.5K")


@settings(max_examples=50, deadline=None)
@given(n=st.integers(min_value=0, max_value=10**6))
def test_human_readable_suffixes_scale_plain_numbers(n):
    assert human_readable_int(str(n)) == n
    assert human_readable_int(f"{n}k") == n * 1000
    assert human_readable_int(f"{n}K") == n * 1024


def test_vllm_serve_with_every_syntax():
    p = parse_vllm_command(
        "vllm serve meta-llama/Llama-3.1-8B --max-model-len=32k --max_num_batched_tokens 8K -tp 2 "
        "--no-enable-prefix-caching --disable-lora --host 0.0.0.0 --port 8000 --trust-remote-code "
        "--limit-mm-per-prompt '{\"image\": 0}' --served-model-name a b -O3")
    assert p.model == "meta-llama/Llama-3.1-8B" and p.program == "serve"
    a = p.args
    assert a["max_model_len"] == 32_000 and a["max_num_batched_tokens"] == 8192
    assert a["tensor_parallel_size"] == 2 and a["enable_prefix_caching"] is False and a["enable_lora"] is False
    assert a["limit_mm_per_prompt"] == {"image": 0} and a["served_model_name"] == ["a", "b"]
    assert a["optimization_level"] == "3"
    assert "--max-model-len" in p.modelled and "--host" in p.no_memory_effect
    assert "--enable-lora" in p.modelled and "--optimization-level" in p.modelled


def test_api_server_module_docker_and_env_prefixes():
    p = parse_vllm_command("CUDA_VISIBLE_DEVICES=0,1 python3 -m vllm.entrypoints.openai.api_server "
                           "--model Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 2")
    assert p.program == "api_server" and p.model == "Qwen/Qwen2.5-7B-Instruct"
    assert p.env == {"CUDA_VISIBLE_DEVICES": "0,1"} and p.args["tensor_parallel_size"] == 2
    d = parse_vllm_command("docker run --gpus all -p 8000:8000 --ipc=host vllm/vllm-openai:v0.33.0 "
                           "--model Qwen/Qwen3-8B --max-model-len 16384")
    assert d.program == "docker" and d.model == "Qwen/Qwen3-8B" and d.args["max_model_len"] == 16384


def test_vllm_serve_moves_model_flag_like_vllm():
    p = parse_vllm_command("vllm serve -tp 2 --model org/m --enforce-eager")
    assert p.model == "org/m" and p.args["enforce_eager"] is True


def test_dotted_json_arguments_merge_into_one_value():
    """FlexibleArgumentParser.parse_args: --cfg.key value and --cfg.list+ a,b become one JSON."""
    p = parse_vllm_command("vllm serve m --compilation-config.mode 3 --compilation-config.cudagraph_capture_sizes+ 1,2 "
                           "--speculative-config.num_speculative_tokens 3 --speculative-config.method ngram")
    assert p.args["compilation_config"] == {"mode": 3, "cudagraph_capture_sizes": ["1", "2"]}
    assert p.args["speculative_config"] == {"num_speculative_tokens": 3, "method": "ngram"}


def test_unique_prefixes_are_accepted_like_argparse():
    """vLLM's parser is argparse with allow_abbrev: `--tensor_parallel 2` is --tensor-parallel-size."""
    assert parse_vllm_command("vllm serve m --tensor_parallel 2").args["tensor_parallel_size"] == 2


def test_ambiguous_prefix_is_an_error():
    with pytest.raises(UsageError, match="ambiguous option: --max-num could match"):
        parse_vllm_command("vllm serve m --max-num 3")


def test_a_flag_that_is_not_vllms_gets_a_did_you_mean():
    with pytest.raises(UsageError) as err:
        parse_vllm_command("vllm serve m --max-modle-len 4096")
    assert err.value.exit_code == ExitCode.USAGE
    assert "unrecognized arguments: --max-modle-len" in err.value.message
    assert "--max-model-len" in err.value.hint


def test_a_flag_vllm_removed_names_the_release():
    with pytest.raises(UsageError) as err:
        parse_vllm_command("vllm serve m --swap-space 4")
    assert "removed in 0.18.0" in err.value.message and "--vllm-version 0.17.1" in err.value.hint
    assert parse_vllm_command("vllm serve m --swap-space 4", vllm_version="0.10.1").args["swap_space"] == 4.0


def test_bad_values_and_choices_are_refused_with_argparse_messages():
    with pytest.raises(UsageError, match=r"argument --max-model-len: invalid human_readable_int_or_auto value: 'lots'"):
        parse_vllm_command("vllm serve m --max-model-len lots")
    with pytest.raises(UsageError, match=r"argument --chat-template-content-format: invalid choice: 'html'"):
        parse_vllm_command("vllm serve m --chat-template-content-format html")
    with pytest.raises(UsageError, match=r"argument --enforce-eager: ignored explicit argument 'yes'"):
        parse_vllm_command("vllm serve m --enforce-eager=yes")
    with pytest.raises(UsageError, match=r"argument --port: expected one argument"):
        parse_vllm_command("vllm serve m --port")


def test_config_file_as_vllm_reads_it(tmp_path):
    """vllm/utils/argparse_utils.py::load_config_file: true -> --flag, false -> --no-flag,
    lists -> repeated values, mappings -> JSON; the command line wins over the file."""
    cfg = tmp_path / "serve.yaml"
    cfg.write_text("model: org/m\nport: 12323\ntensor-parallel-size: 4\nenable-prefix-caching: false\n"
                   "enforce-eager: true\nserved-model-name: [a, b]\n"
                   "speculative-config:\n  method: ngram\n  num_speculative_tokens: 3\n", encoding="utf-8")
    assert load_config_file(cfg)[:4] == ["--model", "org/m", "--port", "12323"]
    p = parse_vllm_command(["vllm", "serve", "--config", str(cfg), "-tp", "2"])
    assert p.model == "org/m"
    assert p.args["tensor_parallel_size"] == 2  # the command line wins
    assert p.args["enable_prefix_caching"] is False and p.args["enforce_eager"] is True
    assert p.args["served_model_name"] == ["a", "b"]
    assert p.args["speculative_config"] == {"method": "ngram", "num_speculative_tokens": 3}


def test_config_file_must_be_yaml(tmp_path):
    with pytest.raises(UsageError, match="Config file must be of a yaml/yml type. json supplied"):
        parse_vllm_command(["vllm", "serve", "m", "--config", str(tmp_path / "c.json")])


def test_non_default_args_line_keeps_opaque_values():
    line = ("non-default args: {'model_tag': 'x', 'runner': 'pooling', 'max_model_len': 2048, "
            "'pooler_config': PoolerConfig(pooling_type='LAST', normalize=True), 'api_key': ['k']}")
    p = parse_non_default_args(line)
    assert p.model == "x" and p.args["max_model_len"] == 2048
    assert p.args["pooler_config"].startswith("PoolerConfig(")
    assert "--pooler-config" in p.not_modelled and "--api-key" in p.no_memory_effect
    assert json.dumps(p.classes_json())


def _table_args(kind):
    from vmemplan.request.vllm_args import load_arg_table

    return [a for a in load_arg_table("0.33.0").args if not a.positional and a.value == kind
            and a.dest not in ("config", "model")]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_bool_flag_of_the_table_parses_both_ways(data):
    spec = data.draw(st.sampled_from(_table_args("bool_optional")))
    on = parse_vllm_command(["vllm", "serve", "m", spec.flags[0]])
    off = parse_vllm_command(["vllm", "serve", "m", spec.negations[0]])
    assert on.args[spec.dest] is True and off.args[spec.dest] is False


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(min_value=1, max_value=65535))
def test_every_integer_flag_of_the_table_takes_an_integer(data, n):
    spec = data.draw(st.sampled_from([a for a in _table_args("value")
                                      if a.type in ("int", "human_readable_int") and a.choices is None]))
    flag = data.draw(st.sampled_from(spec.flags))
    form = data.draw(st.sampled_from(["space", "equals"]))
    argv = [flag, str(n)] if form == "space" else [f"{flag}={n}"]
    assert parse_vllm_command(["vllm", "serve", "m", *argv]).args[spec.dest] == n
