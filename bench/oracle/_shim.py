"""What every oracle shim (``shims_*.py``) does around its own patch: load the oracle script by
path as the module ``vllm_oracle``, then run its ``main`` with the shim's own arguments.

A shim is run as ``python bench/oracle/shims_X.py ORACLE_PATH ARGS...`` (make_fixtures.py's
``SHIMS`` table); the oracle then sees ``ORACLE_PATH ARGS...`` as if it had been run itself.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def load_oracle(oracle_path: str) -> ModuleType:
    """The oracle script at ``oracle_path``, executed as the module ``vllm_oracle``."""
    spec = importlib.util.spec_from_file_location("vllm_oracle", oracle_path)
    assert spec is not None and spec.loader is not None, oracle_path
    oracle = importlib.util.module_from_spec(spec)
    sys.modules["vllm_oracle"] = oracle
    spec.loader.exec_module(oracle)
    return oracle


def run_oracle(oracle: ModuleType, oracle_path: str) -> int:
    """The oracle's ``main`` on the arguments after ``oracle_path``."""
    sys.argv = [oracle_path] + sys.argv[2:]
    return oracle.main()
