"""Shell completion, driven as a shell drives it: a bkctl process with _BKCTL_COMPLETE=bash_complete and the words
typed so far (COMP_WORDS, COMP_CWORD); the same request in-process to walk the whole tree.

It offers exactly the click tree (every command, every option of every command) and file names for paths, and
nothing, within about a second, when ZooKeeper cannot be reached. The bookie and ledger ids of a live cluster are
in tests/cli/cluster/test_completion.py.
"""

from __future__ import annotations

import time

import click
import pytest
from click.testing import CliRunner

from bkctl.cli import cli
from bkctl.completers import (
    complete_bookie_ids,
    complete_known_bookie_ids,
    complete_ledger_ids,
    complete_sandbox_bookies,
)

from support.cli import complete, values


def click_tree() -> dict[tuple[str, ...], click.Context]:
    """Every command's context (the root's settings apply below it: -h is --help), by path."""
    tree = {}

    def walk(command, path, ctx):
        tree[path] = ctx
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                walk(sub, (*path, name), click.Context(sub, info_name=name, parent=ctx, **sub.context_settings))

    walk(cli, (), click.Context(cli, info_name="bkctl", **cli.context_settings))
    return tree


TREE = click_tree()


def values_in_process(*words: str) -> list[str]:
    """``values(*words)`` asked of bkctl's entry point in this process, as ``bkctl.cli.main`` serves a shell: no
    interpreter start per request (the tree has ~170 of them; test_paths_complete_as_file_and_directory_names and
    tests/cli/cluster/test_completion.py ask real processes)."""
    import bkctl.completion  # noqa: F401  (what main() loads for a shell: bash's completion class)

    line = ["bkctl", *words]
    env = {"_BKCTL_COMPLETE": "bash_complete", "COMP_WORDS": " ".join(line), "COMP_CWORD": str(len(line) - 1)}
    result = CliRunner().invoke(cli, [], env=env, prog_name="bkctl")
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    return [item.split(",", 1)[1] for item in result.stdout.splitlines() if item.startswith("plain,")]


@pytest.fixture(scope="module")
def offered():
    """For every command path: what completing a word after it offers, and a word starting with '-'."""
    return {(path, typed): values_in_process(*path, typed) for path in TREE for typed in ("", "-")}


@pytest.mark.parametrize("path", list(TREE), ids=lambda p: " ".join(p) or "bkctl")
def test_completion_offers_every_command_and_option_of_the_click_tree(offered, path):
    ctx = TREE[path]
    command = ctx.command
    options = [
        opt
        for p in command.get_params(ctx)
        if isinstance(p, click.Option) and not p.hidden
        for opt in (*p.opts, *p.secondary_opts)
    ]
    assert sorted(offered[path, "-"]) == sorted(options)
    if isinstance(command, click.Group):
        assert offered[path, ""] == command.list_commands(ctx)


def test_the_tree_has_the_third_level():
    assert {("bookie", "compaction", "suspend"), ("bookie", "inspect", "journal"), ("config", "use-context")} <= set(
        TREE
    )


def test_paths_complete_as_file_and_directory_names():
    assert complete("bookie", "inspect", "journal", "") == [("file", "")]
    assert complete("-c", "") == [("file", "")]
    assert complete("ledger", "create", "--input", "") == [("file", "")]
    assert complete("bench", "bookie", "--raw-dir", "") == [("dir", "")]
    assert complete("bookie", "run", "--journal-dir", "") == [("dir", "")]


GONE = {  # commands about a bookie that is gone: missing bookies complete too
    ("bookie", "recover"),
    ("bookie", "decommission"),
    ("bookie", "replace-in-ledgers"),
    ("cluster", "check-impact"),
    ("ledger", "list"),  # --bookie: the ledgers a missing bookie's ensembles name
}
OFFLINE = {  # a stopped bookie's files: its ledgers are not the cluster's to complete
    ("bookie", "inspect", "journal"),
    ("bookie", "inspect", "entrylog"),
    ("bookie", "inspect", "locations"),
}


def test_every_bookie_and_ledger_parameter_completes_from_the_cluster():
    """A parameter that takes a bookie (BOOKIE) or a ledger (ID, --ledger) completes it: none forgotten."""
    checked = 0
    for path, ctx in TREE.items():
        for param in ctx.command.get_params(ctx):
            shown, where = param.metavar or "", f"bkctl {' '.join(path)} {param.name}"
            if path in GONE and (param.name in ("bookies", "bookie_id", "bookie_ids", "old_id")):
                expected = complete_known_bookie_ids
            elif "BOOKIE" in shown or param.name == "new_id":
                expected = complete_sandbox_bookies if path[0] == "sandbox" else complete_bookie_ids
            elif (shown.startswith(("ID", "[ID")) or "--ledger" in param.opts) and path not in OFFLINE:
                expected = complete_ledger_ids
            else:
                continue
            assert param._custom_shell_complete is expected, where
            checked += 1
    assert checked >= 20


def test_an_unreachable_cluster_completes_nothing_within_about_a_second():
    from bookie.local.process import free_port

    started = time.monotonic()
    assert complete("-u", f"zk+hierarchical://127.0.0.1:{free_port()}/ledgers", "bookie", "info", "") == []
    assert complete("-u", "not-a-uri", "ledger", "read", "") == []
    assert time.monotonic() - started < 5


def test_sandbox_bookies_complete_by_number(tmp_path):
    from bookie.local.bookies import LocalBookie
    from bookie.local.sandbox import Sandbox, SandboxState

    sandbox = Sandbox(tmp_path / "sandbox")
    sandbox.dir.mkdir()
    bookies = [LocalBookie(i, str(tmp_path / f"bookie-{i}"), 4000 + i, 5000 + i).to_dict() for i in (1, 2)]
    sandbox.save(SandboxState(str(sandbox.dir), 2181, bookies=bookies))
    assert values("sandbox", "stop-bookie", "--dir", str(sandbox.dir), "") == ["1", "2"]


def test_impact_levels_complete_after_a_comma():
    assert values_in_process("cluster", "check-impact", "--allow", "below") == ["below-ack-quorum"]
    assert values_in_process("cluster", "check-impact", "--allow", "data-loss,") == [
        "data-loss," + level
        for level in ("data-loss", "read-unavailable", "write-unavailable", "below-ack-quorum", "under-replicated")
    ]
