"""The plain-value coercer (vmemplan.cli._coerce) gives what typer's own adapter gives."""


import enum
import subprocess
import sys
from typing import Any

import pytest
import typer
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param

from vmemplan.cli import _coerce


class Fmt(str, enum.Enum):
    table = "table"
    json = "json"


VALUES = ["12", "-3", "007", "0", "1.5", "-0.25", "1e3", " 12", "12 ", "1_000", "+5", "abc", "", "9" * 30,
          "0.1234567890123456789", "1.", ".5", "table", "json", "JSON", "yaml", "true", "no"]


def _params(annotation: Any, **option: Any) -> list[Any]:
    """One typer option of ``annotation`` as a click parameter (what a command holds)."""

    def command(value: annotation = typer.Option(None, "--value", **option)) -> None:  # type: ignore[valid-type]  # noqa: B008
        pass

    app = typer.Typer(add_completion=False)
    app.command()(command)
    cmd = typer.main.get_command(app)
    return [cmd, *(p for p in cmd.params if p.name == "value")]


def _outcome(coerce: Any, value: Any, param: Any) -> tuple[str, Any]:
    try:
        got = coerce(value)
    except BadParameter as error:
        return "error", error.format_message()
    return type(got).__name__, got


@pytest.mark.parametrize(("annotation", "option"), [
    (int, {}), (float, {}), (str, {}), (bool, {}), (Fmt, {}), (int, {"min": 1}), (int, {"min": 0, "max": 20}),
    (float, {"min": 0.0, "max": 1.0}),
])
def test_every_value_coerces_as_typer_coerces_it(annotation: Any, option: dict[str, Any]) -> None:
    cmd, param = _params(annotation, **option)
    _, fast = _params(annotation, **option)
    assert _coerce.install([fast]) == 1
    ctx = typer.Context(cmd)
    typer_side = build_runtime_param(param.type_descriptor)
    values: list[Any] = [*VALUES, 3, 2.5, True, Fmt.json]
    for value in values:
        expected = _outcome(lambda v: typer_side.coerce(v, param=param, ctx=ctx), value, param)
        got = _outcome(lambda v: fast.get_runtime_param().coerce(v, param=fast, ctx=ctx), value, fast)
        assert got == expected, (annotation, option, value)


def test_a_plain_size_run_imports_no_pydantic() -> None:
    code = ("import sys, io, contextlib\n"
            "sys.argv = ['vmemplan', 'size', 'meta-llama/Llama-3.1-8B', '--gpu', 'h100', '--format', 'json',"
            " '-tp', '2', '--util', '0.85', '--max-model-len', '8192', '--enforce-eager']\n"
            "from vmemplan.cli import main\n"
            "try:\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        main()\n"
            "except SystemExit as e:\n"
            "    assert e.code in (0, None), e.code\n"
            "print(sorted(m for m in ('pydantic', 'rich', 'yaml') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
