"""The dependency rules (bookie/README.md, admin/README.md), checked on the source: bkctl -> admin -> bookie.client ->
bookie.meta/codec."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(package: str) -> dict[Path, set[str]]:
    found = {}
    for path in (ROOT / package).rglob("*.py"):
        if "_proto" in path.parts:
            continue
        names = re.findall(r"^\s*(?:from|import)\s+([\w.]+)", path.read_text(), re.M)
        found[path.relative_to(ROOT)] = set(names)
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


def _module_graph(package: str) -> dict[str, set[str]]:
    """Each module of ``package`` and the modules of ``package`` it imports, at the top or inside a function (both
    are dependencies; a function-level import only defers one); ``from a import b`` counts as ``a.b`` when that
    is a module, else as ``a``."""
    modules = {}
    for path in (ROOT / package).rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        text = path.read_text()
        found = set(re.findall(r"^\s*import\s+([\w.]+)", text, re.M))
        for base, names in re.findall(r"^\s*from\s+([\w.]+)\s+import\s+(\([^)]*\)|[^\n]+)", text, re.M):
            for item in names.strip("()").replace("\n", " ").split(","):
                imported = item.split(" as ")[0].strip()
                found.add(f"{base}.{imported}" if f"{base}.{imported}" in modules else base)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(graph[module]):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_cli_modules_import_one_another_one_way():
    """No import cycle among bkctl's modules: app -> contexts, completers -> app, options -> completers."""
    assert _cycles(_module_graph("bkctl")) == []
