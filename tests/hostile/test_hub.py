"""Issue 15 and 14 item 1: a hostile or unreachable Hub fails fast, quietly and without secrets."""

from __future__ import annotations

import time

import pytest

from tests.hostile.conftest import check_contract, cli, free_port, hub_env

SECRET = "hf_SENTINELsecret123"


@pytest.mark.parametrize("mode", ["silent", "slow", "429", "huge"])
def test_hostile_hub_exits_6(tmp_path, hostile_hub, mode):
    env = hub_env(tmp_path, hostile_hub(mode))
    env["VMEMPLAN_HUB_DEADLINE_S"] = "3"
    run = cli("size", "someorg/some-model", "--gpu", "h100", env=env)
    check_contract(run, 6, secrets=(SECRET,))
    assert "HF_HUB_OFFLINE=1" in run.stderr


def test_refused_hub_fails_fast_without_retry_noise(tmp_path):
    env = hub_env(tmp_path, f"http://127.0.0.1:{free_port()}")
    start = time.monotonic()
    run = cli("size", "mistralai/Mistral-Nemo-Instruct-2407", "--gpu", "h100", env=env)
    elapsed = time.monotonic() - start
    check_contract(run, 6, secrets=(SECRET,))
    assert "Retry" not in run.stderr
    hint = run.stderr.split("hint:")[1]
    assert "HF_HUB_OFFLINE=1" in hint and "local" in hint
    assert "mistralai/Mistral-7B-v0.1" in hint  # the bundled models of the same family
    assert "unsloth" not in hint and "did you mean" not in hint.lower()
    assert elapsed < HANG_S


def test_unresolvable_host(tmp_path):
    env = hub_env(tmp_path, "http://no-such-host.invalid")
    run = cli("size", "Qwen/Qwen9-1B", "--gpu", "h100", env=env)
    check_contract(run, 6, secrets=(SECRET,))
    hint = run.stderr.split("hint:")[1]
    assert "meta-llama" not in hint and "mistralai" not in hint


@pytest.mark.parametrize("endpoint", [
    "http://user:hf_SECRETsecretSECRET@127.0.0.1:{port}",
    "http://127.0.0.1:{port}/hf_SECRETsecretSECRET/",
])
def test_credentials_in_hf_endpoint_are_never_printed(tmp_path, endpoint):
    env = hub_env(tmp_path, endpoint.format(port=free_port()))
    run = cli("size", "someorg/some-model", "--gpu", "h100", env=env)
    check_contract(run, 6, secrets=("hf_SECRETsecretSECRET", "user:", SECRET))


HANG_S = 60


def test_silent_hub_at_the_default_deadline_fails_on_the_first_answer(tmp_path, hostile_hub):
    """A server that takes the connection and never answers: the first answer has 3 s
    (sources/hub.py::_FIRST_ANSWER_S), not the whole 10 s deadline; one attempt, no retry.
    (The bound below is generous: it catches a retry storm, not a slow machine.)"""
    from vmemplan.sources.hub import _FIRST_ANSWER_S, DEFAULT_DEADLINE_S

    assert _FIRST_ANSWER_S + 1.5 < 5 < DEFAULT_DEADLINE_S  # probe + first answer: exit 6 in under 5 s
    env = hub_env(tmp_path, hostile_hub("silent"))
    env.pop("VMEMPLAN_HUB_DEADLINE_S", None)
    start = time.monotonic()
    run = cli("size", "someorg/some-model", "--gpu", "h100", env=env)
    elapsed = time.monotonic() - start
    check_contract(run, 6, secrets=(SECRET,))
    assert f"did not answer within {_FIRST_ANSWER_S:g} s" in run.stderr
    assert elapsed < DEFAULT_DEADLINE_S + 20
