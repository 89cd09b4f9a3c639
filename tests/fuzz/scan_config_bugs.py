"""Regenerate ``CONFIG_BUGS`` in ``_harness.py``: set one key of each bundled config to each of
``BAD_VALUES`` and print one row per distinct raising site that is not a VmemplanError.

    python tests/fuzz/scan_config_bugs.py > /tmp/rows.txt   # then paste into CONFIG_BUGS

Takes about a minute.  Rows already marked ``fixed=True`` must be kept by hand.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import BAD_VALUES, MODELS_DIR, Hang, plan_config, signature, time_limit  # noqa: E402

from vmemplan.core.errors import VmemplanError  # noqa: E402


def main() -> None:
    found: dict[tuple[str, str], tuple[str, str | None, str, str]] = {}
    for path in sorted(MODELS_DIR.glob("*.json")):
        if ".hf_quant_config" in path.name:
            continue
        base = json.loads(path.read_text(encoding="utf-8"))
        targets: list[tuple[str | None, str]] = [(None, k) for k in base]
        if isinstance(base.get("text_config"), dict):
            targets += [("text_config", k) for k in base["text_config"]]
        for where, key in targets:
            for name, value in BAD_VALUES.items():
                config = copy.deepcopy(base)
                (config if where is None else config[where])[key] = copy.deepcopy(value)
                try:
                    with time_limit(5):
                        plan_config(config)
                except VmemplanError:
                    continue
                except (Exception, Hang) as error:  # noqa: BLE001
                    found.setdefault(signature(error), (path.name, where, key, name))
    for (exc, site), (model_file, where, key, name) in found.items():
        print(f"    Bug({exc!r}, {site!r}, {model_file!r}, {where!r}, {key!r}, {name!r}),")


if __name__ == "__main__":
    main()
