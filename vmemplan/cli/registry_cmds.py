"""`vmemplan gpus` and `vmemplan models`: list what the registry holds."""

from __future__ import annotations

import typer

from vmemplan.cli._common import console, emit, reports_errors


@reports_errors
def gpus(
    output_format: str = typer.Option("table", "--format", "-f", help="table or json."),
    no_color: bool = typer.Option(False, "--no-color"),
) -> None:
    """List the GPUs in the registry with the total memory vLLM multiplies.

    Examples:

        vmemplan gpus

        vmemplan gpus --format json
    """
    from vmemplan.core.units import GIB
    from vmemplan.registry import load_registry

    reg = load_registry()
    if output_format == "json":
        import json

        emit(json.dumps([{"id": g.id, "aliases": list(g.aliases), "name": g.name, "vendor": g.vendor,
                          "arch": g.arch, "total_memory_bytes": g.total_memory_bytes,
                          "nvml_total_bytes": g.nvml_total_bytes,
                          "memory_bandwidth_tbps": g.memory_bandwidth_tbps, "bf16_tflops": g.bf16_tflops,
                          "fp8_tflops": g.fp8_tflops, "total_memory_evidence": g.total_memory_evidence}
                         for g in reg.gpus], indent=2) + "\n")
        return
    from rich.table import Table

    table = Table(title="GPUs (total = what CUDA reports, the figure vLLM multiplies by util)")
    for col in ("id", "name", "arch", "total GiB", "evidence", "aliases"):
        table.add_column(col)
    for g in reg.gpus:
        table.add_row(g.id, g.name, g.arch, f"{g.total_memory_bytes / GIB:.2f}", g.total_memory_evidence,
                      ", ".join(a for a in g.aliases if " " not in a))
    console(no_color=no_color).print(table)


@reports_errors
def models(
    output_format: str = typer.Option("table", "--format", "-f", help="table or json."),
    no_color: bool = typer.Option(False, "--no-color"),
) -> None:
    """List the model configs bundled with vmemplan (usable offline).

    Examples:

        vmemplan models

        vmemplan models --format json
    """
    from vmemplan.sources import list_bundled_models

    ids = list_bundled_models()
    if output_format == "json":
        import json

        emit(json.dumps(ids, indent=2) + "\n")
        return
    from rich.table import Table

    table = Table(title=f"{len(ids)} bundled model configs")
    table.add_column("id")
    for m in ids:
        table.add_row(m)
    console(no_color=no_color).print(table)
