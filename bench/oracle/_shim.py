"""What every oracle shim (``shims_*.py``) does around its own patch: load the oracle script by
path as the module ``vllm_oracle``, then run its ``main`` with the shim's own arguments.

A shim is run as ``python bench/oracle/shims_X.py ORACLE_PATH ARGS...`` (make_fixtures.py's
``SHIMS`` table); the oracle then sees ``ORACLE_PATH ARGS...`` as if it had been run itself.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
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


def timm_from_env() -> str:
    """Put ``ORACLE_TIMM_PATH`` (a directory holding timm, for the vision towers built with it)
    first on ``sys.path`` when set, and return the timm version found there, or "(absent)".  Only
    the package's metadata is read: importing timm before the oracle's emulation would fail."""
    import os
    from importlib.metadata import PackageNotFoundError, distribution

    timm_path = os.environ.get("ORACLE_TIMM_PATH")
    if timm_path:
        sys.path.insert(0, timm_path)
    try:
        return distribution("timm").version
    except PackageNotFoundError:
        return "(absent)"


def after_emulation_setup(oracle: ModuleType, install: Callable[[], object]) -> None:
    """Run ``install`` right after the oracle's platform emulation is set up (before the model is
    built), so a shim's stand-ins see the emulated platform."""
    original = oracle.setup_emulation

    def setup_then_install(*args: object, **kwargs: object) -> object:
        out = original(*args, **kwargs)
        install()
        return out

    oracle.setup_emulation = setup_then_install


def shim_main(install: Callable[[ModuleType], object], note: str | None = None) -> int:
    """A shim's whole ``main``: load the oracle named by ``sys.argv[1]``, run ``install(oracle)``
    right after its platform emulation (:func:`after_emulation_setup`), record ``note`` among its
    assumptions, and run it."""
    oracle_path = sys.argv[1]
    oracle = load_oracle(oracle_path)
    after_emulation_setup(oracle, lambda: install(oracle))
    if note is not None:
        oracle.ASSUMPTIONS.append(note)
    return run_oracle(oracle, oracle_path)
