"""Write bench/oracle/architectures.json: vLLM's text-generation architectures.

Reads ``_TEXT_GENERATION_MODELS`` from vLLM's ``model_executor/models/registry.py``
by parsing the source (no vLLM import), so it runs with the project's Python.

    python bench/oracle/list_architectures.py /work/vllm/src-0.33.0/vllm/model_executor/models/registry.py
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def text_generation_models(registry_py: Path) -> dict[str, tuple[str, str]]:
    tree = ast.parse(registry_py.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "_TEXT_GENERATION_MODELS" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            return {k: (v[0], v[1]) for k, v in value.items()}
    raise SystemExit("error: _TEXT_GENERATION_MODELS not found")


def main() -> int:
    registry_py = Path(sys.argv[1])
    models = text_generation_models(registry_py)
    out = {
        "source": "vllm 0.33.0 vllm/model_executor/models/registry.py::_TEXT_GENERATION_MODELS",
        "count": len(models),
        "architectures": [
            {"architecture": arch, "module": mod, "class": cls}
            for arch, (mod, cls) in models.items()
        ],
    }
    (HERE / "architectures.json").write_text(json.dumps(out, indent=1) + "\n")
    print(len(models))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
