#!/usr/bin/env python
"""Add to oracle fixtures the bytes the oracle counts twice because a tensor is a view of another.

The oracle counts tensors on the meta device, not storages; a buffer registered as a view
of a parameter (Mamba-2's ``conv_weights``, a ``conv1d.weight.view(...)``,
model_executor/layers/mamba/mamba_mixer2.py) shares that parameter's storage on a GPU,
so vLLM holds its bytes once.  This reruns the oracle's command for each fixture through
``dump_tensors.py`` (which detects views by ``Tensor._base``) and writes
``oracle.weights.aliased_views_bytes`` and ``aliased_views`` into the fixture; the
comparison subtracts them (tests/oracle/vmemplan_side.py).

    /work/vllm/oracle-venv/bin/python bench/oracle/annotate_aliases.py \\
        --oracle ../shared/tools/vllm-oracle/oracle.py ID [ID ...]
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "oracle"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--oracle", required=True)
    ap.add_argument("ids", nargs="+")
    a = ap.parse_args()
    for case_id in a.ids:
        path = FIXTURES / f"{case_id}.json"
        fx = json.loads(path.read_text())
        args = shlex.split(fx["command"])[2:]  # drop "python <vllm-oracle>/oracle.py"
        args[0] = str(ROOT / args[0])
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "dump.json"
            shim = fx.get("emulation_shim", "").split(" ")[0]  # "bench/oracle/shims_X.py (wraps ...)"
            shim_args = ["--shim", Path(shim).name] if shim else []
            subprocess.run([sys.executable, str(HERE / "dump_tensors.py"), str(out), "--oracle", a.oracle, *shim_args,
                            "--", *args], check=False, capture_output=True)
            dump = json.loads(out.read_text())
        w = fx["oracle"]["weights"]
        w["aliased_views_bytes"] = dump["aliased_views_bytes"]
        w["aliased_views"] = dump["aliased_views"]
        w["aliased_views_note"] = ("bytes of tensors that are views of another counted tensor (same storage on a GPU), "
                                   "counted twice in total_bytes by the oracle; found by bench/oracle/annotate_aliases.py")
        path.write_text(json.dumps(fx, indent=1) + "\n")
        print(case_id, dump["aliased_views_bytes"], dump["aliased_views"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
