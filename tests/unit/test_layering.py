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
