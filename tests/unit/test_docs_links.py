"""The Markdown documentation stays true to the tree and the CLI: every relative link of every ``*.md`` resolves (the
file exists; a ``#anchor`` names a heading of its target, as GitHub makes anchors), the README stays short, every
``bkctl`` line of the docs' shell examples parses as that command, the exit-code table of docs/cli.md is
bkctl/errors.py's, and the configuration table of docs/bookie.md lists exactly the keys a bookie reads."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import fields
from pathlib import Path

import click
import pytest

from bkctl.errors import EXIT_CODE_MEANINGS

ROOT = Path(__file__).resolve().parents[2]
SKIPPED_DIRS = {".git", ".venv", "node_modules", "build", "dist", "__pycache__", ".mypy_cache", ".ruff_cache"}
README_MAX_LINES = 200

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"(?<!!)\[(?:[^\]\n]|\][^(\n])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def markdown_files() -> list[Path]:
    return sorted(
        path
        for path in ROOT.rglob("*.md")
        if not SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts[:-1])
        and not any(part.endswith(".egg-info") for part in path.relative_to(ROOT).parts)
    )


def prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where brackets are code, not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: markup dropped, lower case, punctuation but ``-`` and ``_`` removed, spaces to
    ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "").replace("*", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text())):
        base, n = anchor(heading), 0
        name = base
        while name in found:  # GitHub numbers repeated headings: name, name-1, name-2
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def links(path: Path) -> list[str]:
    return LINK.findall(prose(path.read_text()))


def test_the_docs_are_found():
    names = {str(path.relative_to(ROOT)) for path in markdown_files()}
    assert {"README.md", "docs/cli.md", "bookie/README.md", "benchmarks/README.md"} <= names


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_resolves(path):
    broken = []
    for target in links(path):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto: ...: not ours to check
            continue
        file, _, fragment = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{target}: no heading #{fragment} in {resolved.relative_to(ROOT)}")
    assert broken == []


def test_link_parsing():
    text = "a [link](docs/x.md#y) and `[code](not.md)`, ![image](i.png), [t](https://e.org)\n```\n[no](z.md)\n```\n"
    assert LINK.findall(prose(text)) == ["docs/x.md#y", "https://e.org"]
    assert anchor("One bk_server.conf for both kinds of bookie") == "one-bk_serverconf-for-both-kinds-of-bookie"
    assert anchor("Logs, systemd and containers") == "logs-systemd-and-containers"
    assert anchor("`bkctl` with [BookKeeper](x.md)") == "bkctl-with-bookkeeper"


def test_the_readme_stays_short():
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move detail into docs/"


def test_the_exit_code_table_is_bkctl_errors():
    text = (ROOT / "docs" / "cli.md").read_text()
    table = text.split("<!-- exit-codes")[1].split("<!-- /exit-codes -->")[0]
    rows = [line.split("|")[1:3] for line in table.splitlines() if re.match(r"\| \d+ \|", line)]
    documented = [(int(code), meaning.strip()) for code, meaning in rows]
    assert documented == [(int(code), meaning) for code, meaning in EXIT_CODE_MEANINGS.items()]


# The bkctl command lines of the docs' shell examples: each parses as the command it names, with options that exist
# and values they take (files and paths as given). The parser is tests/unit/test_examples.py's.
def _examples_module():
    spec = importlib.util.spec_from_file_location("_docs_examples", Path(__file__).with_name("test_examples.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shell_lines(path: Path) -> list[str]:
    """The bkctl commands of ``sh`` blocks (a line's, or a pipe's last), continuation lines joined."""
    found = []
    for block in re.findall(r"^```sh\n(.*?)^```", path.read_text(), re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():
            found += [part.strip() for part in line.split(" | ") if part.split(maxsplit=1)[:1] == ["bkctl"]]
    return found


DOC_LINES = [
    (str(path.relative_to(ROOT)), line)
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for line in shell_lines(path)
]


@pytest.fixture
def _paths_as_given(monkeypatch):
    monkeypatch.setattr(click.Path, "convert", lambda self, value, param, ctx: value)
    monkeypatch.setattr(click.File, "convert", lambda self, value, param, ctx: value)


@pytest.mark.usefixtures("_paths_as_given")
@pytest.mark.parametrize(("doc", "line"), DOC_LINES, ids=[f"{doc}: {line}" for doc, line in DOC_LINES])
def test_a_documented_command_line_parses(doc, line):
    examples = _examples_module()
    examples.parse(examples.bkctl_words(line))


def test_the_docs_show_commands():
    assert len(DOC_LINES) > 40


def test_the_configuration_table_has_every_key_a_bookie_reads():
    from bookie.server.config import HONOURED_VALUES, READ_ELSEWHERE, BookieConfig

    text = (ROOT / "docs" / "bookie.md").read_text().split("## Configuration keys")[1]
    first_cells = [line.split("|")[1] for line in text.splitlines() if line.startswith("| `")]
    documented = {key for cell in first_cells for key in re.findall(r"`([^`]+)`", cell)}
    read = {field.name for field in fields(BookieConfig)} | set(BookieConfig.ALIASES)
    read |= set(HONOURED_VALUES) | READ_ELSEWHERE
    assert sorted(read - documented) == [], "keys a bookie reads that docs/bookie.md does not list"
    assert sorted(documented - read) == [], "keys docs/bookie.md lists that no bookie reads"
