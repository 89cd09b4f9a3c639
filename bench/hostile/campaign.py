"""The hostile-input campaign of issue 15, reproducible: every case in a fresh process, under a
memory limit and a hang detector, recording the exit code, the error/hint lines and the time.

    python bench/hostile/campaign.py               # table on stdout
    python bench/hostile/campaign.py --json out.json
    python bench/hostile/campaign.py --random 200  # plus 200 random config mutations (seeded)

A case passes when it exits with a documented code other than 1, prints no traceback, prints
exactly one ``error:`` and one ``hint:`` line when it fails, never prints a secret or a control
character, and finishes before the hang detector (60 s).  The fake Hubs bind 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "registry" / "models"
SECRET = "hf_CAMPAIGNsecret123"
HANG_S = 60
MEMORY = 2 << 30
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def model(name: str) -> dict:
    return json.loads((MODELS / name).read_text())


class _Hub(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        mode = self.server.mode  # type: ignore[attr-defined]
        if mode == "silent":
            time.sleep(120)
        elif mode == "429":
            self.send_response(429)
            self.send_header("Retry-After", "3600")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif mode == "huge":
            self.send_response(200)
            self.send_header("Content-Length", str(10**12))
            self.send_header("ETag", '"x"')
            self.send_header("X-Repo-Commit", "a" * 40)
            self.end_headers()

    do_GET = do_HEAD = _answer


def hub(mode: str) -> str:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    server.daemon_threads = True
    server.mode = mode  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def cases(tmp: Path) -> list[tuple[str, list[str] | str, dict[str, str]]]:
    """(name, argv or shell line, extra env)."""
    out: list[tuple[str, list[str] | str, dict[str, str]]] = []

    def cfg(name: str, config: dict | str) -> str:
        d = tmp / name
        d.mkdir()
        (d / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
        return str(d)

    fifo = tmp / "fifo.json"
    os.mkfifo(fifo)
    llama = model("meta-llama--Llama-3.1-8B.json")
    out += [
        ("fifo config", ["size", str(fifo), "--gpu", "h100"], {}),
        ("fifo log", ["explain-log", str(fifo)], {}),
        ("/dev/zero config", ["size", "/dev/zero", "--gpu", "h100"], {}),
        ("/dev/zero log", ["explain-log", "/dev/zero"], {}),
        ("stdin /dev/zero", f"{sys.executable} -m vmemplan explain-log - </dev/zero", {}),
        ("5000-digit int", ["size", cfg("bigint", json.dumps(llama)[:-1] + ', "hidden_size": ' + "9" * 5000 + "}"),
                            "--gpu", "h100"], {}),
        ("20000-deep json", ["size", cfg("deep", '{"a": ' + "[" * 20000 + "]" * 20000 + "}"), "--gpu", "h100"], {}),
        ("long model id", ["size", "a/" + "b" * 300, "--gpu", "h100"], {}),
        ("stdout closed", f"{sys.executable} -m vmemplan gpus >&-", {}),
        ("stdout full", f"{sys.executable} -m vmemplan gpus >/dev/full", {}),
        ("-q awq on fp8", ["size", "Qwen/Qwen3-8B-FP8", "-q", "awq", "--gpu", "h100"], {}),
        ("gemma-3 default", ["size", "google/gemma-3-27b-it", "--gpu", "h100", "--format", "json"], {}),
    ]
    for mode in ("silent", "429", "huge"):
        out.append((f"hub {mode}", ["size", "someorg/some-model", "--gpu", "h100"],
                    {"HF_ENDPOINT": hub(mode), "HF_HUB_OFFLINE": "0", "VMEMPLAN_HUB_DEADLINE_S": "5"}))
    out.append(("hub userinfo", ["size", "someorg/some-model", "--gpu", "h100"],
                {"HF_ENDPOINT": "http://user:hf_SECRETsecretSECRET@127.0.0.1:9", "HF_HUB_OFFLINE": "0"}))
    evil = dict(llama, architectures=["Evil\x1b]0;pwned\x07"])
    out.append(("escape in architectures", ["size", cfg("evil", evil), "--gpu", "h100"], {}))
    return out


def mutations(tmp: Path, n: int, seed: int) -> list[tuple[str, list[str] | str, dict[str, str]]]:
    """Random garbage in the fields the laws read (seeded, reproducible)."""
    rng = random.Random(seed)
    names = sorted(p.name for p in MODELS.glob("*--*.json") if ".hf_quant_config." not in p.name)
    garbage = [-1, 0, 2.5, True, "abc", [8], 1e30, 10**30, None, float("nan"), float("inf")]
    out = []
    for i in range(n):
        name = rng.choice(names)
        config = model(name)
        target = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
        keys = [k for k, v in target.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not keys:
            continue
        key, value = rng.choice(keys), rng.choice(garbage)
        target[key] = value
        d = tmp / f"m{i}"
        d.mkdir()
        (d / "config.json").write_text(json.dumps(config))
        out.append((f"{name}:{key}={value!r}", ["size", str(d), "--gpu", "h100", "--format", "json"], {}))
    return out


def run(argv: list[str] | str, env: dict[str, str], tmp: Path) -> dict:
    full = dict(os.environ, NO_COLOR="1", HF_HUB_OFFLINE="1", HF_TOKEN=SECRET, HF_HOME=str(tmp / "hf"),
                XDG_CACHE_HOME=str(tmp / "xdg"))
    full.pop("VMEMPLAN_DEBUG", None)
    full.update(env)
    cmd = ["bash", "-c", argv] if isinstance(argv, str) else [sys.executable, "-m", "vmemplan", *argv]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=full, cwd=REPO, capture_output=True, timeout=HANG_S, preexec_fn=_limit,
                              stdin=subprocess.DEVNULL)
        code, out, err = proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        code, out, err = None, "", ""
    elapsed = time.monotonic() - start
    lines = [line for line in err.splitlines() if line.strip()]
    errors = sum(line.startswith("error: ") for line in lines)
    hints = sum(line.startswith("hint: ") for line in lines)
    problems = []
    if code is None:
        problems.append("hang")
    elif code == 1:
        problems.append("exit 1")
    if "Traceback" in err:
        problems.append("traceback")
    if code not in (0, None) and (errors != 1 or hints != 1) and not (isinstance(argv, str) and "gpus" in argv and code == 0):
        problems.append(f"{errors} error / {hints} hint lines")
    if SECRET in out + err or "hf_SECRET" in out + err:
        problems.append("secret printed")
    if CONTROL.search((out + err).replace("\n", "").replace("\t", "")):
        problems.append("control character printed")
    if '"weights_bytes": NaN' in out or "Infinity" in out:
        problems.append("non-JSON number")
    return {"code": code, "seconds": round(elapsed, 2), "problems": problems,
            "error": next((line for line in lines if line.startswith("error: ")), "")[:160]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the records here")
    parser.add_argument("--random", type=int, default=0, help="random config mutations to add")
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        todo = cases(tmp) + mutations(tmp, args.random, args.seed)
        records = []
        for label, argv, env in todo:
            record = {"case": label, **run(argv, env, tmp)}
            records.append(record)
            flag = "ok " if not record["problems"] else "BAD"
            print(f"{flag} {record['code']!s:>4} {record['seconds']:6.2f}s  {label[:60]:60}  {', '.join(record['problems'])}")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=2) + "\n")
    bad = [r for r in records if r["problems"]]
    print(f"{len(records) - len(bad)} of {len(records)} cases meet the contract")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
