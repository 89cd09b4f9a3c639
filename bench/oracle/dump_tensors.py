#!/usr/bin/env python
"""Run the vllm-oracle once and write every tensor one rank holds (for gap diagnosis).

    /work/vllm/oracle-venv/bin/python bench/oracle/dump_tensors.py OUT.json \\
        --oracle ../shared/tools/vllm-oracle/oracle.py [--shim shims_X.py] -- CONFIG --available-bytes N --tp T ...

Wraps the oracle's ``tensor_bytes`` (same counting: each tensor once, host tensors left
out) and writes, after vLLM's ``process_weights_after_loading``, the list of
``[name, shape, dtype, kind, bytes]`` with tensors of equal name pattern (layer index
replaced by ``*``) merged, so that a per-layer difference shows as one line.  Not used by
the tests; the figures it explains are in the fixtures.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path


def main() -> int:
    out_path = sys.argv[1]
    i = sys.argv.index("--oracle")
    oracle_path = sys.argv[i + 1]
    j = sys.argv.index("--")
    argv = sys.argv[j + 1:]
    spec = importlib.util.spec_from_file_location("vllm_oracle", oracle_path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["vllm_oracle"] = mod
    spec.loader.exec_module(mod)
    if "--shim" in sys.argv[:j]:  # a shim exposing install(oracle), run after the platform emulation as it runs
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import _shim

        shim = importlib.import_module(Path(sys.argv[sys.argv.index("--shim") + 1]).stem)
        _shim.after_emulation_setup(mod, lambda: shim.install(mod))
    dumps: list[list] = []
    aliases: list[list] = []
    orig = mod.tensor_bytes

    def wrapped(model):
        rows, seen = [], set()
        counted = {}
        for kind, items in (("parameter", model.named_parameters(remove_duplicate=False)),
                            ("buffer", model.named_buffers(remove_duplicate=False))):
            for name, t in items:
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                if t.device.type != "meta":
                    continue
                rows.append((name, list(t.shape), str(t.dtype).replace("torch.", ""), kind,
                             t.numel() * t.element_size()))
                counted[id(t)] = name
        # a tensor that is a view of another counted tensor shares its storage on a GPU: the
        # oracle (which counts tensors, not storages, on meta) counts its bytes twice
        # Views are found by ``_base`` and by a shared storage: a parameter built on a view
        # (``nn.Parameter(view)``, as MLA's W_UK_T/W_UV of an unquantized kv_b_proj are made by
        # replace_parameter in mla_attention.py::process_weights_after_loading) has no ``_base``
        # but the same StorageImpl (``untyped_storage()._cdata``, which meta tensors keep).
        # Within one storage the largest tensor is the storage's bytes; every other tensor on it
        # is counted twice (whichever of them named_parameters lists first).
        al = []
        by_storage: dict[int, list[tuple[int, str]]] = {}
        for _kind, items in (("parameter", model.named_parameters(remove_duplicate=False)),
                            ("buffer", model.named_buffers(remove_duplicate=False))):
            for name, t in items:
                if t is None or counted.get(id(t)) != name:
                    continue
                nbytes = t.numel() * t.element_size()
                base = getattr(t, "_base", None)
                if base is not None and id(base) in counted:
                    al.append((name, counted[id(base)], nbytes))
                    continue
                try:
                    key = t.untyped_storage()._cdata
                except (RuntimeError, NotImplementedError):
                    continue
                by_storage.setdefault(key, []).append((nbytes, name))
        for members in by_storage.values():
            if len(members) > 1:
                members.sort(key=lambda m: -m[0])
                owner_name = members[0][1]
                al += [(name, owner_name, nbytes) for nbytes, name in members[1:]]
        aliases.append(al)
        dumps.append(rows)
        return orig(model)

    mod.tensor_bytes = wrapped
    rc = mod.main(argv)
    merged: dict[tuple, list] = {}
    for name, shape, dtype, kind, n in (dumps[-1] if dumps else []):
        key = (re.sub(r"\.\d+\.", ".*.", name), tuple(shape), dtype, kind)
        e = merged.setdefault(key, [0, 0])
        e[0] += 1
        e[1] += n
    rows = [{"name": k[0], "shape": list(k[1]), "dtype": k[2], "kind": k[3], "count": v[0], "bytes": v[1]}
            for k, v in sorted(merged.items(), key=lambda kv: -kv[1][1])]
    al = aliases[-1] if aliases else []
    alias_rows: dict[tuple, list] = {}
    for name, base, n in al:
        key = (re.sub(r"\.\d+\.", ".*.", name), re.sub(r"\.\d+\.", ".*.", base))
        e = alias_rows.setdefault(key, [0, 0])
        e[0] += 1
        e[1] += n
    with open(out_path, "w") as f:
        json.dump({"argv": argv, "tensors": rows,
                   "aliased_views_bytes": sum(n for _, _, n in al),
                   "aliased_views": [{"name": k[0], "view_of": k[1], "count": v[0], "bytes": v[1]}
                                     for k, v in alias_rows.items()]}, f, indent=1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
