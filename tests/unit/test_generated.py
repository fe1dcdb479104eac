"""Generated files are never edited by hand: regenerating them must change nothing."""

import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem + "_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _same_tree(generated: Path, committed: Path, pattern: str) -> None:
    fresh = {p.name: p.read_text() for p in generated.glob(pattern)}
    current = {p.name: p.read_text() for p in committed.glob(pattern)}
    assert sorted(fresh) == sorted(current), "files differ: regenerate and commit"
    stale = [name for name in fresh if fresh[name] != current[name]]
    assert not stale, f"stale generated files {stale}: regenerate and commit"


def test_proto_code_is_current(tmp_path):
    _load(REPO / "proto" / "generate.py").generate(tmp_path)
    _same_tree(tmp_path / "bookie" / "_proto", REPO / "bookie" / "_proto", "*.py")


def test_man_pages_are_current(tmp_path):
    subprocess.run([sys.executable, str(REPO / "man" / "generate.py"), "--out", str(tmp_path)], check=True)
    _same_tree(tmp_path, REPO / "man", "*.1")
