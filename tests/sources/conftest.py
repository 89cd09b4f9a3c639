"""Fixtures for vmemplan.sources: an isolated HF environment and a fake Hugging Face Hub.

No test here touches the network: the fake Hub is an http.server bound to 127.0.0.1 on a free
port, and huggingface_hub is pointed at it through HF_ENDPOINT (env, read by vmemplan.sources at
call time) and huggingface_hub.constants (read by huggingface_hub's own helpers).

The routes mirror what huggingface_hub 2.4 asks for (read from its file_download.py and
hf_api.py):

* ``HEAD/GET /{org}/{name}/resolve/{revision}/{filename}`` -- ``get_hf_file_metadata`` needs
  ``X-Repo-Commit`` and an ``ETag`` (it raises FileMetadataError without them) and takes the size
  from ``Content-Length``; the GET streams the bytes.  Safetensors files behave like LFS files:
  the resolve URL answers 302 with ``Location`` on the same host plus ``X-Linked-Etag`` /
  ``X-Linked-Size``, and ``/cdn/{sha256}`` serves the bytes, honouring ``Range``
  (``parse_safetensors_file_metadata`` reads ``bytes=0-100000`` first).
* errors carry ``X-Error-Code`` the way ``hf_raise_for_status`` expects: ``RepoNotFound`` (404),
  ``GatedRepo`` (401 without a token, 403 with one), ``RevisionNotFound`` and ``EntryNotFound``
  (404, the latter with ``X-Repo-Commit``).
* ``GET /api/models/{org}/{name}/revision/{rev}`` -- model info with ``siblings``; 2.4's
  ``get_safetensors_metadata`` does not call it (it uses HEAD on the resolve URL), but older
  releases' helpers do, so the fake serves it.
"""

from __future__ import annotations

import hashlib
import json
import socket
import struct
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

SENTINEL_TOKEN = "hf_SENTINELsecret123"

_DTYPE_BYTES = {"F64": 8, "F32": 4, "BF16": 2, "F16": 2, "F8_E4M3": 1, "I8": 1, "U8": 1, "I32": 4, "I64": 8}


def safetensors_bytes(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A valid .safetensors file: 8-byte LE header length, JSON header, zeroed tensor data."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        numel = 1
        for dim in shape:
            numel *= dim
        size = numel * _DTYPE_BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + b"\0" * offset


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class FakeRepo:
    """A model repo: commits (sha -> {filename: bytes}) and refs (name -> sha)."""

    commits: dict[str, dict[str, bytes]]
    refs: dict[str, str]
    gated: bool = False

    def resolve(self, revision: str) -> str | None:
        if revision in self.commits:
            return revision
        return self.refs.get(revision)


@dataclass
class FakeHub:
    base_url: str
    repos: dict[str, FakeRepo]
    # (method, path, authorization header, range header) of every request received
    requests: list[tuple[str, str, str | None, str | None]] = field(default_factory=list)
    lfs: dict[str, bytes] = field(default_factory=dict)  # sha256 -> bytes

    def add_repo(self, repo_id: str, files_by_ref: dict[str, dict[str, bytes]], *, gated: bool = False) -> FakeRepo:
        """Register a repo; each ref gets its own commit sha (derived from the repo id and ref)."""
        commits: dict[str, dict[str, bytes]] = {}
        refs: dict[str, str] = {}
        for ref, files in files_by_ref.items():
            sha = hashlib.sha1(f"{repo_id}@{ref}".encode()).hexdigest()
            commits[sha] = dict(files)
            refs[ref] = sha
            for name, data in files.items():
                if name.endswith(".safetensors"):
                    self.lfs[hashlib.sha256(data).hexdigest()] = data
        repo = FakeRepo(commits=commits, refs=refs, gated=gated)
        self.repos[repo_id] = repo
        return repo

    def paths_requested(self) -> list[str]:
        return [request[1] for request in self.requests]

    def authorizations(self) -> set[str | None]:
        return {request[2] for request in self.requests}


def _make_handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # keep pytest output clean
            pass

        # -- helpers -------------------------------------------------------------------------
        def _send(self, status: int, headers: dict[str, str], body: bytes = b"") -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            if "Content-Length" not in headers:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD" and body:
                self.wfile.write(body)

        def _error(self, status: int, code: str | None, message: str, extra: dict[str, str] | None = None) -> None:
            headers = {"Content-Type": "application/json", "X-Error-Message": message}
            if code:
                headers["X-Error-Code"] = code
            headers.update(extra or {})
            self._send(status, headers, json.dumps({"error": message}).encode())

        def _serve_bytes(self, data: bytes, headers: dict[str, str]) -> None:
            range_header = self.headers.get("Range") or self.headers.get("range")
            if range_header and range_header.startswith("bytes="):
                start_text, _, end_text = range_header[len("bytes=") :].partition("-")
                start = int(start_text)
                end = min(int(end_text) if end_text else len(data) - 1, len(data) - 1)
                chunk = data[start : end + 1]
                headers = dict(headers, **{"Content-Range": f"bytes {start}-{end}/{len(data)}"})
                self._send(206, headers, chunk)
            else:
                self._send(200, headers, data)

        # -- routes --------------------------------------------------------------------------
        def _route(self) -> None:
            hub.requests.append((self.command, self.path, self.headers.get("authorization"), self.headers.get("range")))
            path = urlsplit(self.path).path
            parts = path.strip("/").split("/")
            if len(parts) >= 2 and parts[0] == "cdn":
                data = hub.lfs.get(parts[1])
                if data is None:
                    self._error(404, None, "no such object")
                    return
                self._serve_bytes(data, {"ETag": f'"{parts[1]}"', "Content-Type": "application/octet-stream"})
                return
            if len(parts) >= 6 and parts[:2] == ["api", "models"] and parts[4] == "revision":
                self._model_info(f"{parts[2]}/{parts[3]}", unquote(parts[5]))
                return
            if len(parts) >= 5 and parts[2] == "resolve":
                self._resolve(f"{parts[0]}/{parts[1]}", unquote(parts[3]), unquote("/".join(parts[4:])))
                return
            self._error(404, None, "unknown route")

        def _repo_or_error(self, repo_id: str) -> FakeRepo | None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._error(404, "RepoNotFound", "Repository not found")
                return None
            if repo.gated:
                auth = self.headers.get("authorization")
                # A hostile or careless server might echo the credential back; vmemplan must scrub it.
                self._error(
                    403 if auth else 401,
                    "GatedRepo",
                    f"Access to model {repo_id} is restricted. Credential seen: {auth}",
                )
                return None
            return repo

        def _resolve(self, repo_id: str, revision: str, filename: str) -> None:
            repo = self._repo_or_error(repo_id)
            if repo is None:
                return
            commit = repo.resolve(revision)
            if commit is None:
                self._error(404, "RevisionNotFound", "Invalid rev id")
                return
            files = repo.commits[commit]
            if filename not in files:
                self._error(404, "EntryNotFound", "Entry not found", {"X-Repo-Commit": commit})
                return
            data = files[filename]
            if filename.endswith(".safetensors"):  # LFS-style: redirect to the content-addressed store
                sha256 = hashlib.sha256(data).hexdigest()
                self._send(
                    302,
                    {
                        "Location": f"/cdn/{sha256}",
                        "X-Repo-Commit": commit,
                        "X-Linked-Etag": f'"{sha256}"',
                        "X-Linked-Size": str(len(data)),
                        "ETag": f'"{git_blob_sha1(data)}"',
                    },
                )
                return
            self._serve_bytes(
                data,
                {
                    "X-Repo-Commit": commit,
                    "ETag": f'"{git_blob_sha1(data)}"',
                    "Content-Type": "application/octet-stream",
                },
            )

        def _model_info(self, repo_id: str, revision: str) -> None:
            repo = self._repo_or_error(repo_id)
            if repo is None:
                return
            commit = repo.resolve(revision)
            if commit is None:
                self._error(404, "RevisionNotFound", "Invalid rev id")
                return
            body = {
                "id": repo_id,
                "sha": commit,
                "siblings": [{"rfilename": name} for name in sorted(repo.commits[commit])],
            }
            self._send(200, {"Content-Type": "application/json"}, json.dumps(body).encode())

        def do_HEAD(self) -> None:
            self._route()

        def do_GET(self) -> None:
            self._route()

    return Handler


@pytest.fixture
def hf_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private HF_HOME (returned), no token, online, and no real endpoint reachable by accident."""
    from huggingface_hub import constants

    home = tmp_path / "hf-home"
    home.mkdir()
    for var in (
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "HF_HUB_CACHE",
        "HUGGINGFACE_HUB_CACHE",
        "VMEMPLAN_REGISTRY",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: never a real Hub
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setattr(constants, "HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(home / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(home / "stored_tokens"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setattr(
        constants, "HUGGINGFACE_CO_URL_TEMPLATE", "http://127.0.0.1:9/{repo_id}/resolve/{revision}/{filename}"
    )
    # huggingface_hub backs off for up to ~23 s on connection errors; tests need not wait.
    import huggingface_hub.utils._http as hub_http

    monkeypatch.setattr(hub_http.time, "sleep", lambda seconds: None)
    return home


@pytest.fixture
def fake_hub(hf_env: Path, monkeypatch: pytest.MonkeyPatch):
    """Start the fake Hub and point both the env and huggingface_hub.constants at it."""
    from huggingface_hub import constants

    hub = FakeHub(base_url="", repos={})
    server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(hub))
    server.daemon_threads = True
    hub.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", hub.base_url)
    monkeypatch.setattr(constants, "ENDPOINT", hub.base_url)
    template = hub.base_url + "/{repo_id}/resolve/{revision}/{filename}"
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", template)
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def closed_port() -> int:
    """A local TCP port with nothing listening (connections are refused at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _populate_cache(
    hf_home: Path, repo_id: str, files: dict[str, bytes], *, ref: str = "main", commit: str = "c" * 40
) -> Path:
    """Write the HF cache layout models--org--name/{refs/<ref>, snapshots/<commit>/<files>}."""
    repo_dir = hf_home / "hub" / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for name, data in files.items():
        (snapshot / name).write_bytes(data)
    (repo_dir / "refs").mkdir(exist_ok=True)
    (repo_dir / "refs" / ref).write_text(commit)
    return snapshot


@pytest.fixture
def populate_cache(hf_env: Path):
    """populate_cache(repo_id, files, ref=..., commit=...) -> snapshot dir, inside the test's HF_HOME."""

    def populate(repo_id: str, files: dict[str, bytes], **kwargs: str) -> Path:
        return _populate_cache(hf_env, repo_id, files, **kwargs)

    return populate


@pytest.fixture(scope="session")
def st_bytes():
    """The safetensors_bytes builder, for tests (conftest modules are not importable by name)."""
    return safetensors_bytes


@pytest.fixture
def sentinel_token() -> str:
    return SENTINEL_TOKEN
