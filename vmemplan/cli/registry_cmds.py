"""`vmemplan gpus` and `vmemplan models`: list what the registry holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from vmemplan.cli._common import console, emit, output_width, reports_errors
from vmemplan.cli._options import NoColorOpt
from vmemplan.render import ListFormat, assert_never

FormatOpt = Annotated[ListFormat, typer.Option("--format", "-f", help="table or json.")]


def _show(output_format: ListFormat, no_color: bool, as_json: Callable[[], Any], as_table: Callable[[int], Any]) -> None:
    """Print a registry listing: ``as_json()`` dumped, or the table ``as_table(width)`` at the
    terminal's width."""
    if output_format is ListFormat.json:
        from vmemplan.render.json_out import dumps

        emit(dumps(as_json()))
    elif output_format is ListFormat.table:
        console(no_color=no_color).print(as_table(output_width()))
    else:
        assert_never(output_format)


@reports_errors
def gpus(output_format: FormatOpt = ListFormat.table, no_color: NoColorOpt = False) -> None:
    """List the GPUs in the registry with the total memory vLLM multiplies.

    Examples:

        vmemplan gpus

        vmemplan gpus --format json
    """
    from vmemplan.registry import load_registry
    from vmemplan.render.registry import gpus_json, gpus_table

    reg = load_registry()
    _show(output_format, no_color, lambda: gpus_json(reg.gpus), lambda width: gpus_table(reg.gpus, width))


@reports_errors
def models(
    output_format: FormatOpt = ListFormat.table,
    show_all: bool = typer.Option(False, "--all", help="Also list registry-internal entries (variant copies, "
                                                       "GGUF and MLX repos, unknown/…)."),
    no_color: NoColorOpt = False,
) -> None:
    """List the model configs bundled with vmemplan (usable offline), with their aliases and family.

    Examples:

        vmemplan models

        vmemplan models --format json
    """
    from vmemplan.core.errors import VmemplanError
    from vmemplan.core.graph import GraphContext
    from vmemplan.model_config import ModelConfig
    from vmemplan.models import adapter_for
    from vmemplan.render.registry import model_entries, models_json, models_table
    from vmemplan.sources import bundled_aliases, list_bundled_models, load_model_source

    ids = list_bundled_models()
    families: dict[str, str] = {}
    architectures: dict[str, str] = {}
    unplanned: set[str] = set()
    for mid in ids:
        config = load_model_source(mid, allow_hub=False).config
        architectures[mid] = str((config.get("architectures") or [config.get("model_type") or "?"])[0])
        try:  # the family vmemplan plans it with; none when `size` would refuse the architecture
            adapter = adapter_for(ModelConfig.from_dict(config), allow_generic=False)
            adapter.validate_parallel(GraphContext())  # a config the family itself refuses (as vLLM would)
            cls = type(adapter)
            if cls.__module__.endswith(".declared"):  # an entry of registry/architectures/: its base family
                cls = cls.__mro__[1]
            families[mid] = cls.__module__.rsplit(".", 1)[-1]  # the family module that plans it
        except VmemplanError:
            families[mid] = "not planned yet"
            unplanned.add(mid)
    entries = model_entries(ids, families, bundled_aliases(), show_all=show_all, unplanned=unplanned,
                            architectures=architectures)

    def table(width: int) -> Any:
        shown = {e.target or e.id for e in entries}
        hidden = 0 if show_all else sum(1 for m in ids if m not in shown and m not in unplanned)
        left_out = 0 if show_all else sum(1 for m in unplanned if m not in shown)
        return models_table(entries, width, hidden=hidden, unplanned=left_out)

    _show(output_format, no_color, lambda: models_json(entries), table)
