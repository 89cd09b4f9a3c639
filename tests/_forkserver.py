"""Run ``python -m vmemplan ARGS`` as a real child process, without paying the imports each time.

A test-only fork server: one ``python`` process per environment imports what a CLI run imports
(found by running one plain ``size`` in a throw-away child), then forks a fresh process for each
command.  That child sets its own working directory, environment and limits, takes the test's
pipes as stdin/stdout/stderr, and runs ``vmemplan`` as ``__main__`` exactly as ``python -m``
does, ending through the interpreter's own exit (SystemExit, tracebacks, atexit, flushing).  So
a test still sees a separate process, its exit status and its raw byte streams; only the ~0.7 s
of importing typer, rich, pydantic and vmemplan is shared.

What is *not* shared: nothing runs in the server but imports.  The family modules
(``vmemplan.models.*``, which register themselves) are left to each child, so registration order
is a fresh process's.  A child may set only the environment variables vmemplan reads when it
runs (``SAFE_OVERRIDES``); any other difference from the server's environment gets a server of
its own, because a library may read it at import time.

Tests that are about the process itself (startup imports, signals, a closed pipe, the console
script, ``-c`` probes) keep using :mod:`subprocess`.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: Variables vmemplan reads only when a command runs (never at import): a child may set these
#: itself.  Anything else in the environment gets its own server.
SAFE_OVERRIDES = ("XDG_CACHE_HOME", "VMEMPLAN_NO_CACHE", "VMEMPLAN_DEBUG", "VMEMPLAN_HUB_DEADLINE_S",
                  "VMEMPLAN_REGISTRY", "PYTEST_CURRENT_TEST")  # pytest changes the last one per test

_SERVER = r'''
import os, sys
sys.path[0] = os.getcwd()          # as `python -m` has it
sys.argv = ["-m"]                  # vmemplan/__init__ installs the Ctrl-C handler for the CLI
import json, socket, array, runpy, resource, signal

def _discover():
    # the modules one plain CLI run imports, in order, from a throw-away child
    import shutil, tempfile
    scratch = tempfile.mkdtemp(prefix="vmemplan-forkserver-")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.environ["XDG_CACHE_HOME"] = scratch
        sys.argv = ["-m", "size", PROBE, "--gpu", "h100", "--format", "json"]
        try:
            runpy._run_module_as_main("vmemplan", alter_argv=True)
        except BaseException:
            pass
        os.write(w, json.dumps(list(sys.modules)).encode())
        os._exit(0)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    os.waitpid(pid, 0)
    shutil.rmtree(scratch, ignore_errors=True)
    return json.loads(b"".join(chunks) or b"[]")

def _preimport():
    import importlib
    before = set(sys.modules)
    for name in _discover():
        if name in before or name in sys.modules or name == "__main__" or name.endswith(".__main__"):
            continue
        if name.startswith("vmemplan.models.") and name != "vmemplan.models.base":
            continue  # families register themselves: left to each child, in a fresh order
        try:
            importlib.import_module(name)
        except BaseException:
            pass

def _serve(path):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        while True:  # reap finished handlers
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        try:
            head, fds, _, _ = socket.recv_fds(conn, 8, 3)
            size = int(head.decode()) if len(head) == 8 else -1
            body = b""
            while 0 <= size and len(body) < size:
                chunk = conn.recv(size - len(body))
                if not chunk:
                    break
                body += chunk
            request = json.loads(body.decode()) if size >= 0 and len(body) == size else None
        except (OSError, ValueError):
            request, fds = None, locals().get("fds", [])
        if request is None:
            conn.close()
            for fd in fds:
                os.close(fd)
            continue
        handler = os.fork()
        if handler:
            conn.close()
            for fd in fds:
                os.close(fd)
            continue
        listener.close()
        child = os.fork()
        if child == 0:
            conn.close()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            for fd in fds:
                if fd > 2:
                    os.close(fd)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            if request.get("rlimit_as"):
                limit = request["rlimit_as"]
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            sys.path[0] = os.getcwd()
            sys.argv = ["-m", *request["args"]]
            return
        for fd in fds:
            os.close(fd)
        conn.sendall(json.dumps({"pid": child}).encode() + b"\n")
        _, status = os.waitpid(child, 0)
        code = os.waitstatus_to_exitcode(status)
        try:
            conn.sendall(json.dumps({"code": code}).encode() + b"\n")
        except OSError:
            pass
        os._exit(0)

_preimport()
_serve(SOCKET_PATH)
runpy._run_module_as_main("vmemplan", alter_argv=True)
'''


class ForkServer:
    """One server process for one environment (see the module docstring)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = dict(env)
        self._dir = tempfile.mkdtemp(prefix="vmemplan-fs-")
        self.path = os.path.join(self._dir, "sock")
        probe = str(REPO / "registry" / "models" / "meta-llama--Llama-3.1-8B.json")
        code = (_SERVER.replace("SOCKET_PATH", repr(self.path))
                .replace("PROBE", repr(probe)))
        self.proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != b"ready":
            self.proc.kill()
            raise RuntimeError("the fork server did not start")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        try:
            os.unlink(self.path)
            os.rmdir(self._dir)
        except OSError:
            pass

    def run(self, args: list[str], *, env: dict[str, str], cwd: Path | str, stdin: bytes | None,
            timeout: float, rlimit_as: int | None = None) -> tuple[int, bytes, bytes]:
        """Run one command; returns (exit code, stdout bytes, stderr bytes) like subprocess.run."""
        if stdin is not None:
            in_r, in_w = os.pipe()
        else:  # as subprocess.DEVNULL
            in_r, in_w = os.open(os.devnull, os.O_RDONLY), -1
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        writer = None
        try:
            sock.connect(self.path)
            request = {"args": list(args), "env": env, "cwd": str(cwd), "rlimit_as": rlimit_as}
            body = json.dumps(request).encode()
            socket.send_fds(sock, [b"%08d" % len(body)], [in_r, out_w, err_w])
            sock.sendall(body)
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        if stdin is not None:
            def feed() -> None:
                try:
                    _write_all(in_w, stdin)
                except OSError:
                    pass
                finally:
                    os.close(in_w)

            writer = threading.Thread(target=feed, daemon=True)
            writer.start()
        reply = sock.makefile("rb")
        child = json.loads(reply.readline())["pid"]
        deadline = time.monotonic() + timeout
        out, err = _drain({out_r: bytearray(), err_r: bytearray()}, deadline)
        if out is None:
            try:
                os.kill(child, 9)
            except OSError:
                pass
            reply.close()
            sock.close()
            raise subprocess.TimeoutExpired(["vmemplan", *args], timeout)
        status = reply.readline()
        reply.close()
        sock.close()
        if writer is not None:
            writer.join(timeout=5)
        return json.loads(status)["code"], out, err


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _drain(buffers: dict[int, bytearray], deadline: float) -> tuple[bytes, bytes] | tuple[None, None]:
    sel = selectors.DefaultSelector()
    for fd in buffers:
        sel.register(fd, selectors.EVENT_READ)
    order = list(buffers)
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return None, None
            for key, _ in sel.select(timeout=min(left, 1.0)):
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    buffers[key.fd] += chunk
                else:
                    sel.unregister(key.fd)
    finally:
        sel.close()
        for fd in order:
            os.close(fd)
    return bytes(buffers[order[0]]), bytes(buffers[order[1]])


_servers: dict[tuple[tuple[str, str], ...], ForkServer] = {}
_lock = threading.Lock()


def _close_all() -> None:
    for server in _servers.values():
        server.close()
    _servers.clear()


atexit.register(_close_all)


def server_for(env: dict[str, str]) -> tuple[ForkServer, dict[str, str]]:
    """The server whose environment matches ``env`` but for SAFE_OVERRIDES (started on first use)."""
    base = {k: v for k, v in env.items() if k not in SAFE_OVERRIDES}
    key = tuple(sorted(base.items()))
    with _lock:
        server = _servers.get(key)
        if server is None or server.proc.poll() is not None:
            server = _servers[key] = ForkServer(base)
    return server, env


def run_vmemplan(args: list[str] | tuple[str, ...], *, env: dict[str, str], cwd: Path | str = REPO,
                 stdin: bytes | None = None, timeout: float = 60,
                 rlimit_as: int | None = None) -> tuple[int, bytes, bytes]:
    """``subprocess.run([sys.executable, "-m", "vmemplan", *args], ...)``, through a fork server."""
    server, env = server_for(env)
    return server.run(list(args), env=env, cwd=cwd, stdin=stdin, timeout=timeout, rlimit_as=rlimit_as)


class SubprocessShim:
    """A stand-in for the :mod:`subprocess` module in a script under test: ``run`` of
    ``[sys.executable, "-m", "vmemplan", ...]`` with captured output goes through a fork server,
    anything else to the real :func:`subprocess.run`."""

    def __getattr__(self, name: str) -> object:
        return getattr(subprocess, name)

    @staticmethod
    def run(cmd: list[str], *, cwd: Path | str | None = None, env: dict[str, str] | None = None,
            capture_output: bool = False, text: bool = False, check: bool = False,
            **kwargs: object) -> subprocess.CompletedProcess:
        if (not capture_output or kwargs or not isinstance(cmd, list) or cmd[:3] != [sys.executable, "-m", "vmemplan"]):
            return subprocess.run(cmd, cwd=cwd, env=env, capture_output=capture_output, text=text, check=check,
                                  **kwargs)  # type: ignore[call-overload]
        code, out, err = run_vmemplan(cmd[3:], env=dict(os.environ if env is None else env), cwd=cwd or os.getcwd())
        result: subprocess.CompletedProcess = subprocess.CompletedProcess(cmd, code, out, err)
        if text:  # as subprocess's text mode: locale encoding, universal newlines
            import locale

            encoding = locale.getpreferredencoding(False)
            result.stdout = out.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")
            result.stderr = err.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")
        if check:
            result.check_returncode()
        return result
