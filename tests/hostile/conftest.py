"""Helpers for the hostile-input suite (issue 15).

Every CLI case runs in a fresh subprocess under a memory limit (RLIMIT_AS) and a generous
timeout (forked from a server that has done the imports when nothing but run-time settings
differ: ``tests/_forkserver.py``; a shell line, an fd or another environment runs the full
``python -m vmemplan``).  The timeout is a hang detector, not a speed assertion.  :func:`check_contract`
asserts the documented exit code, exactly one ``error:`` and one ``hint:`` line on stderr,
no traceback, and (optionally) that no secret and no control character reached a stream.
"""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests._forkserver import SAFE_OVERRIDES, run_vmemplan

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "registry" / "models"
HANG_S = 60  # a hang detector, not a speed assertion
MEMORY_LIMIT = 2 << 30  # 2 GiB of address space

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _limit_memory() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


def cli(*args: str, stdin: bytes | int | None = None, env: dict[str, str] | None = None,
        stdout: int | None = None, stderr: int | None = None, cwd: Path | None = None,
        timeout: float = HANG_S, shell: str | None = None) -> Run:
    """Run ``python -m vmemplan ARGS`` (or a shell line) in a subprocess; no network, no user cache."""
    full_env = dict(os.environ)
    full_env.pop("VMEMPLAN_DEBUG", None)
    full_env.setdefault("HF_HUB_OFFLINE", "1")
    full_env["NO_COLOR"] = "1"
    full_env["COLUMNS"] = "100"
    if env:
        full_env.update(env)
    full_env = {k: v for k, v in full_env.items() if v is not None}
    if shell is None and stdout is None and stderr is None and (stdin is None or isinstance(stdin, bytes)) \
            and _FORK_SERVER and _differs_only_in_safe_keys(full_env, env):
        # the same fresh child process, forked from a server that has done the imports already
        code, out_b, err_b = run_vmemplan(args, env=full_env, cwd=cwd or REPO, stdin=stdin, timeout=timeout,
                                          rlimit_as=MEMORY_LIMIT)
        return Run(code, out_b.decode("utf-8", "replace"), err_b.decode("utf-8", "replace"))
    cmd: list[str] | str
    if shell is not None:
        cmd = ["bash", "-c", shell]
    else:
        cmd = [sys.executable, "-m", "vmemplan", *args]
    kwargs = {}
    if isinstance(stdin, bytes):
        kwargs["input"] = stdin
    elif stdin is not None:
        kwargs["stdin"] = stdin
    else:
        kwargs["stdin"] = subprocess.DEVNULL
    proc = subprocess.run(cmd, env=full_env, cwd=cwd or REPO, timeout=timeout, preexec_fn=_limit_memory,
                          stdout=stdout if stdout is not None else subprocess.PIPE,
                          stderr=stderr if stderr is not None else subprocess.PIPE, **kwargs)
    out = proc.stdout.decode("utf-8", "replace") if isinstance(proc.stdout, bytes) else ""
    err = proc.stderr.decode("utf-8", "replace") if isinstance(proc.stderr, bytes) else ""
    return Run(proc.returncode, out, err)


#: ``VMEMPLAN_TEST_NO_FORK_SERVER=1`` runs every case with subprocess.run, as before the fork server.
_FORK_SERVER = not os.environ.get("VMEMPLAN_TEST_NO_FORK_SERVER")


def _differs_only_in_safe_keys(full_env: dict[str, str], env: dict[str, str] | None) -> bool:
    return not env or all(key in SAFE_OVERRIDES for key in env)


def check_contract(run: Run, code: int, *, secrets: tuple[str, ...] = ()) -> None:
    """The documented exit code, one ``error:`` line and one ``hint:`` line, no traceback."""
    assert run.code == code, f"exit {run.code}, expected {code}\nstdout: {run.stdout[-2000:]}\nstderr: {run.stderr[-2000:]}"
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    hints = [line for line in lines if line.startswith("hint: ")]
    assert len(errors) == 1, run.stderr
    assert len(hints) == 1, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    assert not _CONTROL.search(run.stderr.replace("\n", "").replace("\t", "")), repr(run.stderr)
    for secret in secrets:
        assert secret not in run.stderr and secret not in run.stdout, run.stderr


def model_json(name: str) -> dict:
    return json.loads((MODELS / name).read_text())


def write_config(tmp_path: Path, config: dict | str, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(config if isinstance(config, str) else json.dumps(config), encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------
# a hostile fake Hub on 127.0.0.1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Hostile(BaseHTTPRequestHandler):
    mode = "silent"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _answer(self) -> None:
        mode = self.server.mode  # type: ignore[attr-defined]
        self.server.hits += 1  # type: ignore[attr-defined]
        if mode == "silent":
            self.server.stop.wait(120)  # type: ignore[attr-defined]
            return
        if mode == "slow":
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            for _ in range(600):
                if self.server.stop.wait(0.5):  # type: ignore[attr-defined]
                    return
                try:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                except OSError:
                    return
            return
        if mode == "429":
            self.send_response(429)
            self.send_header("Retry-After", "3600")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "huge":
            self.send_response(200)
            self.send_header("Content-Length", str(10**12))
            self.send_header("ETag", '"abc"')
            self.send_header("X-Repo-Commit", "a" * 40)
            self.end_headers()
            if self.command == "GET":
                try:
                    for _ in range(2000):
                        self.wfile.write(b"{" * 65536)
                except OSError:
                    return
            return

    do_GET = _answer
    do_HEAD = _answer


@pytest.fixture
def hostile_hub():
    """Start a hostile Hub: ``hub(mode)`` -> its base URL; modes silent, slow, 429, huge."""
    servers = []

    def start(mode: str) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
        server.daemon_threads = True
        server.mode = mode  # type: ignore[attr-defined]
        server.hits = 0  # type: ignore[attr-defined]
        server.stop = threading.Event()  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.stop.set()
        server.shutdown()
        server.server_close()


def hub_env(tmp_path: Path, endpoint: str) -> dict[str, str]:
    return {"HF_ENDPOINT": endpoint, "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf"),
            "HF_HUB_CACHE": str(tmp_path / "hf" / "hub"), "XDG_CACHE_HOME": str(tmp_path / "xdg"),
            "HF_TOKEN": "hf_SENTINELsecret123"}
