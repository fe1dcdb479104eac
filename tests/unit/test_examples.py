"""The examples of bkctl/examples.py (shown by --help and the man pages) are real command lines of the command they
are listed under: every option exists and takes what it is given, the arguments fit, and every command has some."""

from __future__ import annotations

import shlex

import click
import pytest

from bkctl.app import Application
from bkctl.cli import cli
from bkctl.examples import EXAMPLES, epilog

SHELL_OPERATORS = {"|", ">", ">>", "<", "&&", "||", ";"}


def command_paths() -> dict[str, click.Command]:
    """Every command under bkctl by path ("bookie gc"; "" for bkctl), lazy groups loaded."""
    found = {}

    def walk(command: click.Command, path: str, ctx: click.Context) -> None:
        found[path] = command
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                walk(sub, f"{path} {name}".strip(), click.Context(sub, info_name=name, parent=ctx))

    walk(cli, "", click.Context(cli, info_name="bkctl"))
    return found


def bkctl_words(line: str) -> list[str]:
    """The words of the bkctl command in a shell line: after ``bkctl``, up to a pipe or redirection."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = list(lexer)
    assert "bkctl" in words, f"{line!r} runs no bkctl"
    words = words[words.index("bkctl") + 1 :]
    ends = [i for i, word in enumerate(words) if word in SHELL_OPERATORS]
    return words[: ends[0]] if ends else words


def parse(words: list[str]) -> str:
    """Parse ``words`` as click does, level by level, running no command; return the command's path. Paths and
    files are taken as they are (they name files of another machine); everything else is checked."""
    command, ctx, path, app = cli, None, [], Application(None, None, None, 0)
    while True:
        ctx = command.make_context(path[-1] if path else "bkctl", list(words), parent=ctx, obj=app)
        if not isinstance(command, click.Group):
            return " ".join(path)
        _, rest, _ = command.make_parser(ctx).parse_args(list(words))  # what the group leaves to its command
        name, words = rest[0], rest[1:]
        sub = command.get_command(ctx, name)
        if sub is None:
            raise click.UsageError(f"bkctl {' '.join(path)} has no command {name!r}")
        command = sub
        path.append(name)


@pytest.fixture(autouse=True)
def _paths_as_given(monkeypatch):
    monkeypatch.setattr(click.Path, "convert", lambda self, value, param, ctx: value)
    monkeypatch.setattr(click.File, "convert", lambda self, value, param, ctx: value)


CASES = [(path, line) for path, examples in EXAMPLES.items() for line, _ in examples]


@pytest.mark.parametrize(("path", "line"), CASES, ids=[line for _, line in CASES])
def test_an_example_is_a_valid_command_line_of_its_command(path, line):
    parsed = parse(bkctl_words(line))
    assert parsed == path or path == ""  # bkctl's own examples show its global options on any command


def test_every_command_has_examples_and_every_example_a_command():
    commands = command_paths()
    leaves = {path for path, command in commands.items() if not isinstance(command, click.Group)}
    assert sorted(leaves - set(EXAMPLES)) == [], "commands without examples: add them to bkctl/examples.py"
    assert sorted(set(EXAMPLES) - set(commands)) == []
    assert "" in EXAMPLES  # bkctl's own


@pytest.mark.parametrize(
    "bad",
    [
        "bkctl bookie gc --all --majr",  # no such option
        "bkctl bookie gc-status -o xml",  # not a choice
        "bkctl ledger read",  # its ID is missing
        "bkctl ledger metadata 1 2",  # one ID only
        "bkctl cluster check-impact",  # --bookie is required
        "bkctl bookie compaction halt",  # no such command
        "bkctl sandbox start --bookies 99",  # out of range
    ],
)
def test_the_parser_refuses_what_click_refuses(bad):
    with pytest.raises(click.ClickException):
        parse(bkctl_words(bad))


def test_help_shows_the_examples(bkctl):
    result = bkctl("bookie", "compaction", "suspend", "--help")
    assert result.exit_code == 0
    examples = result.stdout.split("Examples:\n")[1]
    assert examples.splitlines() == [
        "    # which bookies would be told",
        "    bkctl bookie compaction suspend --all --major --dry-run",
        "    # a Java bookie, over its HTTP admin API",
        "    bkctl bookie compaction suspend 10.0.0.7:3181 --http-port 8080",
    ]
    assert epilog("bookie compaction suspend").splitlines()[1:] == [
        "Examples:",
        *(line[2:] for line in examples.splitlines()),
    ]
