"""The floors of vmemplan, checked on the source (``ast``, no import is run).

Every module under ``vmemplan/`` is parsed; its imports are collected at every depth (a
function-level import counts as much as a top-level one; relative imports are resolved; an
``if TYPE_CHECKING:`` import counts for the floor rules but not for cycles, since it never
runs).  The rules:

(a) no import cycle between vmemplan modules;
(b) ``laws/`` never imports ``models/`` (nor ``model_config``): adapters call laws, not back;
(c) ``core/`` imports nothing from vmemplan outside ``core/``;
(d) typer, rich, yaml and huggingface_hub are imported only by the shell: the CLI, the
    renderers, the model sources, the registry loader and ``_yaml.py``;
(e) no module over :data:`MAX_LINES` lines, except the listed ones, which may only shrink.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "vmemplan"

#: Third-party packages that cost start-up time or touch the outside world.
SHELL_PACKAGES = frozenset({"typer", "rich", "yaml", "huggingface_hub"})

#: Where those may be imported: module names, or a package name ending in ".*" for everything
#: under it.
SHELL_MODULES = (
    "vmemplan.cli.*",  # the CLI shell
    "vmemplan.render.*",  # renderers
    "vmemplan.sources",  # the model sources (a module today; a package once split)
    "vmemplan.sources.*",
    "vmemplan.registry",  # the registry loader
    "vmemplan._yaml",  # the one YAML reader with its parse cache
)

#: Known exceptions to (d), to be removed, never added to.  api.py's progress spinner (rich)
#: belongs in cli/; the API module is being rewritten on another branch.
SHELL_EXCEPTIONS: Mapping[str, frozenset[str]] = {}

#: The line limit for a module ("about 600").
MAX_LINES = 600

#: Modules over MAX_LINES today, with their line counts: each may only shrink, and must be
#: removed from this list once it is under the limit.  Empty since core/kv_specs.py (835),
#: rules.py (801), laws/kv_groups.py (685) and models/multimodal.py (668) were split, and
#: explain/whatif.py (649), models/deepseek_v4.py (632), request/vllm_args.py (605),
#: sim/scheduler.py (605) and models/deepseek.py (602).
OVERSIZED: Mapping[str, int] = {}

#: The line limit for a function's body, after its docstring ("about 80").
MAX_FUNCTION_LINES = 80

#: Functions over MAX_FUNCTION_LINES today (``module::function`` -> body lines): each may only
#: shrink, and leaves the list once it is under the limit.  Data tables count as data, not as
#: code: none is listed here.
LONG_FUNCTIONS: Mapping[str, int] = {
    "vmemplan.models.phi4mm::phi4mm_audio_encoder": 82,
    "vmemplan.sources.hub::_from_hub": 83,
}


@dataclass(frozen=True)
class Import:
    target: str  # absolute dotted name, resolved to a vmemplan module where it names one
    runtime: bool  # False for imports under ``if TYPE_CHECKING:``
    line: int


def module_name(path: Path, root: Path = PACKAGE) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(source: str, module: str, *, is_package: bool, known: Iterable[str] = ()) -> list[Import]:
    """Every import in ``source`` (at any depth), as absolute names.

    ``from pkg import name`` becomes ``pkg.name`` when that is a module in ``known``, else
    ``pkg``.  Relative imports are resolved against ``module``.
    """
    modules = set(known)
    out: list[Import] = []

    def base_of(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        parts = module.split(".")
        if not is_package:
            parts = parts[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        return ".".join(parts + ([node.module] if node.module else []))

    def visit(node: ast.AST, runtime: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, False)
            for child in node.orelse:
                visit(child, runtime)
            return
        if isinstance(node, ast.Import):
            out.extend(Import(alias.name, runtime, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = base_of(node)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                out.append(Import(candidate if candidate in modules else base, runtime, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, runtime)

    visit(ast.parse(source), True)
    return out


def _owner(target: str, modules: set[str]) -> str | None:
    """The vmemplan module an import target names (``a.b.c`` -> ``a.b`` if only that exists)."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def find_cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (or a self-import), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    nodes = set(graph) | {w for ws in graph.values() for w in ws}
    for start in sorted(nodes):
        if start in index:
            continue
        # iterative Tarjan: (node, iterator over its successors)
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(graph.get(start, ()))))]
        while work:
            v, successors = work[-1]
            advanced = False
            for w in successors:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1 or v in graph.get(v, ()):
                    found.append(sorted(component))
    return sorted(found)


@dataclass(frozen=True)
class Package:
    files: Mapping[str, Path]  # module name -> file
    imports: Mapping[str, tuple[Import, ...]]  # module name -> its imports

    def edges(self, *, runtime_only: bool) -> dict[str, set[str]]:
        names = set(self.files)
        graph: dict[str, set[str]] = {m: set() for m in names}
        for module, imports in self.imports.items():
            for imp in imports:
                if runtime_only and not imp.runtime:
                    continue
                owner = _owner(imp.target, names)
                if owner is not None and owner != module:
                    graph[module].add(owner)
        return graph


def load_package(root: Path = PACKAGE) -> Package:
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    imports = {
        name: tuple(imports_of(path.read_text(encoding="utf-8"), name, is_package=path.name == "__init__.py",
                               known=files))
        for name, path in files.items()
    }
    return Package(files, imports)


@pytest.fixture(scope="module")
def package() -> Package:
    return load_package()


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


# --------------------------------------------------------------------------------------------
# the checker can fail
# --------------------------------------------------------------------------------------------


def test_the_checks_can_fail() -> None:
    """The cycle finder and the import reader on tiny made-up inputs."""
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"a"}}) == [["a"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import kv_pool\n"
        "from ..core.units import cdiv\n"
        "if TYPE_CHECKING:\n"
        "    from vmemplan.models.base import Adapter\n"
        "def f():\n"
        "    import yaml\n"
        "    from vmemplan.models import dense\n"
    )
    known = {"vmemplan.laws.kv_pool", "vmemplan.core.units", "vmemplan.models.base", "vmemplan.models.dense"}
    got = {(i.target, i.runtime) for i in imports_of(source, "vmemplan.laws.x", is_package=False, known=known)}
    assert ("vmemplan.laws.kv_pool", True) in got  # relative, resolved to the module
    assert ("vmemplan.core.units", True) in got  # two levels up
    assert ("vmemplan.models.base", False) in got  # TYPE_CHECKING: not a runtime edge
    assert ("yaml", True) in got  # function-level imports are seen
    assert ("vmemplan.models.dense", True) in got


# --------------------------------------------------------------------------------------------
# the rules
# --------------------------------------------------------------------------------------------


def test_no_import_cycles(package: Package) -> None:
    cycles = find_cycles(package.edges(runtime_only=True))
    assert cycles == [], "import cycles between vmemplan modules: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_laws_never_import_models(package: Package) -> None:
    bad = sorted(
        f"{module} -> {target}"
        for module, targets in package.edges(runtime_only=False).items()
        if _under(module, "vmemplan.laws")
        for target in targets
        if _under(target, "vmemplan.models") or target == "vmemplan.model_config"
    )
    assert bad == [], "laws/ importing the model layer: " + ", ".join(bad)


def test_core_imports_only_core(package: Package) -> None:
    bad = sorted(
        f"{module} -> {target}"
        for module, targets in package.edges(runtime_only=False).items()
        if _under(module, "vmemplan.core")
        for target in targets
        if not _under(target, "vmemplan.core")
    )
    assert bad == [], "core/ importing above its floor: " + ", ".join(bad)


def _shell_allowed(module: str) -> bool:
    for pattern in SHELL_MODULES:
        if pattern.endswith(".*"):
            if _under(module, pattern[:-2]):
                return True
        elif module == pattern:
            return True
    return False


def test_shell_packages_stay_in_the_shell(package: Package) -> None:
    bad = sorted(
        f"{module}:{imp.line} imports {imp.target}"
        for module, imports in package.imports.items()
        if not _shell_allowed(module)
        for imp in imports
        if imp.target.split(".")[0] in SHELL_PACKAGES
        and imp.target.split(".")[0] not in SHELL_EXCEPTIONS.get(module, frozenset())
    )
    assert bad == [], "typer/rich/yaml/huggingface_hub below the shell: " + ", ".join(bad)


def test_shell_exceptions_are_still_needed(package: Package) -> None:
    for module, allowed in SHELL_EXCEPTIONS.items():
        used = {imp.target.split(".")[0] for imp in package.imports.get(module, ())}
        assert allowed <= used, f"{module} no longer imports {sorted(allowed - used)}: drop it from SHELL_EXCEPTIONS"


def _line_counts(package: Package) -> dict[str, int]:
    root = PACKAGE.parent
    return {path.relative_to(root).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
            for path in package.files.values()}


def test_no_module_grows_past_the_limit(package: Package) -> None:
    counts = _line_counts(package)
    too_big = sorted(f"{name} ({n} lines)" for name, n in counts.items()
                     if n > MAX_LINES and name not in OVERSIZED)
    assert too_big == [], f"modules over {MAX_LINES} lines: " + ", ".join(too_big)
    grew = sorted(f"{name} ({counts[name]} > {limit})" for name, limit in OVERSIZED.items()
                  if name in counts and counts[name] > limit)
    assert grew == [], "listed oversized modules grew (they may only shrink): " + ", ".join(grew)


def test_the_oversized_list_only_shrinks(package: Package) -> None:
    counts = _line_counts(package)
    stale = sorted(name for name in OVERSIZED if counts.get(name, 0) <= MAX_LINES)
    assert stale == [], "now under the limit (or gone): remove from OVERSIZED: " + ", ".join(stale)


def _function_lengths(package: Package) -> dict[str, int]:
    """``module::function`` (``Class.method`` for methods) -> lines of its body after the docstring."""
    out: dict[str, int] = {}
    for name, path in package.files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        stack: list[tuple[ast.AST, str]] = [(tree, "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    stack.append((child, f"{prefix}{child.name}."))
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    body = child.body
                    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                        body = body[1:]
                    if body:
                        out[f"{name}::{prefix}{child.name}"] = (child.end_lineno or 0) - body[0].lineno + 1
                    stack.append((child, f"{prefix}{child.name}."))
    return out


def test_no_function_grows_past_the_limit(package: Package) -> None:
    lengths = _function_lengths(package)
    too_long = sorted(f"{name} ({n} lines)" for name, n in lengths.items()
                      if n > MAX_FUNCTION_LINES and name not in LONG_FUNCTIONS)
    assert too_long == [], f"functions over {MAX_FUNCTION_LINES} lines: " + ", ".join(too_long)
    grew = sorted(f"{name} ({lengths[name]} > {limit})" for name, limit in LONG_FUNCTIONS.items()
                  if lengths.get(name, 0) > limit)
    assert grew == [], "listed long functions grew (they may only shrink): " + ", ".join(grew)
    stale = sorted(name for name in LONG_FUNCTIONS if lengths.get(name, 0) <= MAX_FUNCTION_LINES)
    assert stale == [], "now under the limit (or gone): remove from LONG_FUNCTIONS: " + ", ".join(stale)


def test_the_function_measure_can_fail(tmp_path: Path) -> None:
    """Body lines after the docstring, methods named by their class, nested functions too."""
    (tmp_path / "m.py").write_text(
        "def short():\n    '''doc'''\n    return 1\n"
        "class K:\n    def long(self):\n" + "        x = 1\n" * 81 + "        def inner():\n            pass\n",
        encoding="utf-8")
    lengths = _function_lengths(Package({"m": tmp_path / "m.py"}, {}))
    assert lengths["m::short"] == 1
    assert lengths["m::K.long"] == 83 > MAX_FUNCTION_LINES
    assert lengths["m::K.long.inner"] == 1
