"""The dependency rules (bookie/README.md, admin/README.md), checked on the source: bkctl -> admin -> bookie.client ->
bookie.meta/codec."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _imports(package: str) -> dict[Path, set[str]]:
    """Each file of ``package`` (generated code aside) and the absolute module names it imports from."""
    found = {}
    for path in (ROOT / package).rglob("*.py"):
        if "_proto" in path.parts:
            continue
        statements = _import_statements(ast.parse(path.read_text(), str(path)))
        found[path.relative_to(ROOT)] = {
            name
            for node in statements
            for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""])
            if name
        }
    return found


def test_the_cli_and_admin_use_typed_clients_never_generated_messages():
    """`grep -rn _proto bkctl/` is empty, and admin/ uses no bookie-protocol message: both go through bookie.client
    (its typed BookieClient and admin clients). admin/pulsar parses Pulsar's own stored messages (pulsar_*_pb2)."""
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "bkctl").rglob("*.py") if "_proto" in p.read_text()]
    offenders += [
        str(p.relative_to(ROOT))
        for p in (ROOT / "admin").rglob("*.py")
        if re.search(r"\b(bookkeeper_protocol|bookie_admin|data_formats)_pb2", p.read_text())
    ]
    assert offenders == []


def test_dependencies_point_one_way():
    for path, names in _imports("bookie").items():
        assert not any(n.startswith(("bkctl", "admin")) for n in names), path
        if path.parts[1] == "client":
            assert not any(n.startswith(("bookie.server", "bookie.storage")) for n in names), path
    for path, names in _imports("admin").items():
        assert not any(n.startswith(("bkctl", "bookie.server")) for n in names), path


def test_the_core_starts_no_cli_and_only_its_metadata_store_imports_kazoo():
    """bookie/ starts its processes through its own entry points (python -m bookie.server, bookie.autorecovery),
    never `python -m bkctl` or admin/; kazoo stays behind bookie.meta, whose errors are bookie.errors."""
    spawns_cli = re.compile(r"""["']-m["'],\s*["'](bkctl|admin)\b""")
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "bookie").rglob("*.py") if spawns_cli.search(p.read_text())]
    for package in ("bookie", "admin", "bkctl"):
        for path, names in _imports(package).items():
            if any(n.split(".")[0] == "kazoo" for n in names) and path.parts[:2] != ("bookie", "meta"):
                offenders.append(str(path))
    assert offenders == []


def _modules(package: str, root: Path) -> dict[str, Path]:
    """Every module of ``package`` (dotted), by dotted name: a package is its ``__init__``."""
    found = {}
    for path in (root / package.replace(".", "/")).rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _import_statements(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement: at module level, in a function, or under ``if TYPE_CHECKING:`` (a type a module
    needs is a dependency as much as a function it calls)."""
    return (node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom))


def _imported(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that ``node``, in ``module``, imports (relative imports resolved)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in modules}
    base = node.module or ""
    if node.level:
        anchor = module.split(".") if is_package else module.split(".")[:-1]
        anchor = anchor[: len(anchor) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    names = {f"{base}.{alias.name}" for alias in node.names}
    return {name if name in modules else base for name in names} & modules.keys()


def import_graph(package: str, root: Path = ROOT) -> dict[str, set[str]]:
    """Which modules of ``package`` (dotted, under ``root``) each of its modules imports."""
    modules = _modules(package, root)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        graph[module] = set().union(*(_imported(module, is_package, n, modules) for n in _import_statements(tree)))
    return graph


def import_cycles(package: str, root: Path = ROOT) -> list[list[str]]:
    """The import cycles between modules of ``package``: its graph's strongly connected components of more than one
    module (or of a module that imports itself), each sorted (Tarjan's algorithm)."""
    graph = import_graph(package, root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1 or module in graph[module]:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


def test_import_cycles_are_found_through_relative_lazy_and_type_checking_imports(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from pkg.a import A\n",
        "a.py": "from . import b\nA = 1\n",
        "b.py": "def f():\n    from pkg.sub import c\n",
        "sub/__init__.py": "",
        "sub/c.py": "from ..a import A\nimport pkg.d\n",
        "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import e\nelse:\n    import os\n",
        "e.py": "import pkg.d\nfrom pkg import e\n",
    }
    for name, text in files.items():
        (package / name).write_text(text)
    assert import_graph("pkg", tmp_path)["pkg.d"] == {"pkg.e"}
    assert import_cycles("pkg", tmp_path) == [["pkg.a", "pkg.b", "pkg.sub.c"], ["pkg.d", "pkg.e"]]


@pytest.mark.parametrize("package", ["bkctl", "admin", "bookie"])
def test_no_import_cycle_between_modules(package):
    """Each module can be read after what it imports: shared types sit in modules of their own (bookie.client's
    bookie_client, context and bookie_admin; bkctl's completers) that the others import, never the other way."""
    assert import_cycles(package) == []
