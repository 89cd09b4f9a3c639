"""Copy every serve command of the corpus logs into tests/request/fixtures/serve_commands.yaml.

Sources: each log header's ``command:`` lines and each ``non-default args: {...}`` line vLLM
printed.  Header commands are written by people: prose after the command ("(Ray executor across
2 nodes)"), placeholders ("<local jinja>") and JSON whose shell quotes were lost are repaired,
and each repair is recorded in the entry's ``cleaned`` field.

    python bench/vllm_args/extract_corpus_commands.py ../shared/corpus/logs
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml


def _version(text: object) -> str | None:
    m = re.match(r"(\d+\.\d+(?:\.\d+)?)", str(text or ""))
    return m.group(1) if m else None


def clean(command: str) -> tuple[str, list[str]]:
    notes = []
    m = re.search(r"\s+\(([^()]*)\)\s*$", command)
    if m and not m.group(1).startswith("{"):
        command = command[: m.start()]
        notes.append(f"dropped the trailing prose ({m.group(1)})")
    if "<" in command:
        command = re.sub(r"<[^<>]*>", "/tmp/template.jinja", command)
        notes.append("placeholder <...> replaced by a path")

    def quote(match: re.Match[str]) -> str:
        return f"{match.group(1)} '{match.group(2)}'"

    fixed = re.sub(r"(--[\w-]+-config) (\{[^'\s]*\})", quote, command)
    if fixed != command:
        notes.append("JSON value quoted for the shell (the post lost its quotes)")
    return fixed, notes


def main(logs: Path, out: Path) -> None:
    entries = []
    for path in sorted(logs.glob("*.log")):
        text = path.read_text(encoding="utf-8")
        header = yaml.safe_load(text.split("---")[1])
        version = _version(header.get("vllm_version"))
        head = text.split("---")[1]
        for raw in re.findall(r"^\s*command:\s*(.*)$", head, re.M):
            command, notes = clean(raw.strip())
            entries.append({"log": path.name, "vllm_version": version, "kind": "command",
                            "command": command, **({"cleaned": notes} if notes else {})})
        for line in re.findall(r"non-default args: (\{.*\})", text):
            entries.append({"log": path.name, "vllm_version": version, "kind": "non_default_args", "command": line})
    out.write_text("# Serve commands of the corpus logs (../shared/corpus/logs), extracted by\n"
                   "# bench/vllm_args/extract_corpus_commands.py; each must parse (tests/request/test_serve_commands.py).\n"
                   + yaml.safe_dump(entries, sort_keys=False, width=1000, allow_unicode=True), encoding="utf-8")
    print(f"{len(entries)} commands -> {out}", file=sys.stderr)


if __name__ == "__main__":
    root = Path(__file__).resolve().parents[2]
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else root.parent.parent / "shared" / "corpus" / "logs",
         root / "tests" / "request" / "fixtures" / "serve_commands.yaml")
