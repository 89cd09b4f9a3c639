"""vLLM's ``--config FILE.yaml``: a YAML mapping of flag: value pairs turned into flags, read
through the bounded regular-file reader (a FIFO, ``/dev/zero`` or a huge file is refused, exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vmemplan.core.errors import UsageError

__all__ = ["MAX_CONFIG_FILE_BYTES", "load_config_file"]


#: The largest ``--config`` YAML read: vLLM's are a few hundred bytes of flag: value pairs.
MAX_CONFIG_FILE_BYTES = 1 << 20


def load_config_file(path: str | Path, table: Any = None) -> list[str]:
    """vLLM's ``--config FILE.yaml`` as flags (vllm/utils/argparse_utils.py::load_config_file):
    ``true`` -> ``--key``, ``false`` -> ``--no-key`` where that exists, lists -> ``--key a b``,
    mappings -> ``--key '<json>'``, anything else -> ``--key value``."""
    p = Path(path)
    ext = str(path).split(".")[-1]
    if ext not in ("yaml", "yml"):
        raise UsageError(f"Config file must be of a yaml/yml type. {ext} supplied",
                         hint="vLLM's --config takes a YAML file of flag: value pairs")
    from vmemplan._yaml import safe_load_text, yaml_error
    from vmemplan.sources._io import NotRegularFile, read_regular

    try:
        data = read_regular(p, MAX_CONFIG_FILE_BYTES)  # a FIFO, /dev/zero or a huge file is never read whole
        if len(data) > MAX_CONFIG_FILE_BYTES:
            raise UsageError(f"--config {path} is larger than {MAX_CONFIG_FILE_BYTES >> 20} MiB",
                             hint="vLLM's --config takes a short YAML file of flag: value pairs")
        config = safe_load_text(data.decode("utf-8")) or {}
    except NotRegularFile as exc:
        raise UsageError(f"--config {path} {exc.strerror}",
                         hint="give --config a regular YAML file of flag: value pairs") from None
    except OSError as exc:
        raise UsageError(f"Unable to read the config file at {path}. Check path correctness",
                         hint=f"{exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--config {path} is not UTF-8 text", hint="save the YAML file as UTF-8") from None
    except yaml_error() as exc:
        raise UsageError(f"--config {path} is not valid YAML ({str(exc).splitlines()[0]})",
                         hint="vLLM's --config takes a YAML mapping of flag: value") from None
    except (ValueError, RecursionError):  # a 4,300-digit integer, nesting too deep
        raise UsageError(f"--config {path} holds a value vmemplan cannot read (a number of thousands of "
                         "digits, or nesting too deep)", hint="write plain flag: value pairs, as vLLM's --config takes"
                         ) from None
    if not isinstance(config, dict):
        raise UsageError(f"--config {path} is not a mapping", hint="write one flag: value per line")
    try:
        return _config_flags(config, table)
    except (ValueError, RecursionError):  # a 4,300-digit integer, a structure nested too deep
        raise UsageError(f"--config {path} holds a value vmemplan cannot read back as a flag "
                         "(a number of thousands of digits, or nesting too deep)",
                         hint="write plain flag: value pairs, as vLLM's --config takes") from None


def _config_flags(config: dict[Any, Any], table: Any) -> list[str]:
    out: list[str] = []
    for key, value in config.items():
        if isinstance(value, bool):
            if value:
                out.append(f"--{key}")
            elif table is None or f"--no-{key}" in table.by_string:
                out.append(f"--no-{key}")
        elif isinstance(value, list):
            if value:
                out.append(f"--{key}")
                out.extend(str(v) for v in value)
        elif isinstance(value, dict):
            out += [f"--{key}", json.dumps(value)]
        else:
            out += [f"--{key}", str(value)]
    return out
