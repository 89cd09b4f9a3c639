"""Issue 15: a hostile parse-cache entry never hangs, never blames the registry, never sticks."""

from __future__ import annotations

import os

import pytest

from tests.hostile.conftest import cli


def _entries(cache):
    return sorted(p for p in (cache / "vmemplan").iterdir() if p.name.endswith(".marshal"))


@pytest.fixture
def cache(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    first = cli("gpus", env=env)
    assert first.code == 0, first.stderr
    assert _entries(tmp_path), "the run wrote no cache entries"
    return tmp_path, env, first.stdout


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "corrupt", "huge-length", "swapped", "truncated"])
def test_hostile_cache_entry(cache, kind):
    root, env, expected = cache
    entries = _entries(root)
    blobs = [p.read_bytes() for p in entries]
    for i, entry in enumerate(entries):
        entry.unlink()
        if kind == "fifo":
            os.mkfifo(entry)
        elif kind == "dev-zero":
            entry.symlink_to("/dev/zero")
        elif kind == "corrupt":
            entry.write_bytes(b"\xfa" + os.urandom(64))
        elif kind == "huge-length":
            entry.write_bytes(b"\xdb\xff\xff\xff\x7f" + b"x" * 16)  # a list of 2^31 items
        elif kind == "swapped":
            entry.write_bytes(blobs[(i + 1) % len(blobs)])
        elif kind == "truncated":
            entry.write_bytes(blobs[i][: len(blobs[i]) // 2])
    run = cli("gpus", env=env)
    assert run.code == 0, run.stderr
    assert run.stdout == expected
    assert "Traceback" not in run.stderr and not run.stderr.strip()


@pytest.mark.parametrize("forged", [{"forged": [1, 2]}, [], "text"])
def test_forged_entry_with_a_valid_envelope_is_parsed_again(tmp_path, forged):
    # the right header (format, version, source hash) around data of the wrong shape: every
    # command that reads it drops it and parses the source again; the answer is unchanged
    import marshal

    env = {"XDG_CACHE_HOME": str(tmp_path)}
    args = ("size", "meta-llama/Llama-3.1-8B", "--gpu", "h100")
    expected = {cmd: cli(*cmd, env=env) for cmd in (("gpus",), args)}
    assert all(r.code == 0 for r in expected.values())
    for entry in _entries(tmp_path):
        envelope = marshal.loads(entry.read_bytes())
        entry.write_bytes(marshal.dumps(envelope[:3] + (forged,)))
    for cmd, first in expected.items():
        run = cli(*cmd, env=env)
        assert run.code == 0, run.stderr
        assert run.stdout == first.stdout
        assert "Traceback" not in run.stderr


def test_registry_snapshot_rebuilds_the_same_records(tmp_path, monkeypatch):
    # the validated registry is kept once per install; a later process rebuilds it from the
    # snapshot without YAML or pydantic, and the records are equal to freshly validated ones
    import dataclasses
    import subprocess
    import sys

    from vmemplan import registry as R
    from vmemplan.core.records import decode, encode

    root = R.registry_dir()
    fresh = R._validate_registry(root)
    assert decode(encode(fresh), R._record_classes()) == fresh
    gpu = fresh["gpus"][0]
    assert dataclasses.replace(gpu, total_memory_bytes=1).total_memory_bytes == 1
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    probe = ("import sys; from vmemplan.registry import load_registry; r = load_registry(); "
             "print(len(r.gpus), len(r.rules_packs), 'yaml' in sys.modules, 'pydantic.main' in sys.modules)")
    first = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    n_gpus, n_packs = len(fresh["gpus"]), len(fresh["rules_packs"])
    assert first.stdout.split() == [str(n_gpus), str(n_packs), "True", "True"]
    assert second.stdout.split() == [str(n_gpus), str(n_packs), "False", "False"]
    assert list((tmp_path / "vmemplan").glob("registry-*.marshal"))


def test_snapshot_names_only_record_classes(tmp_path):
    # a snapshot naming a class outside the registry's records is refused (KeyError), never built
    from vmemplan import registry as R
    from vmemplan.core.records import decode

    with pytest.raises(KeyError):
        decode({"__record__": "subprocess.Popen", "args": ["true"]}, R._record_classes())
    with pytest.raises(TypeError):
        decode({"x": b"bytes"}, R._record_classes())
