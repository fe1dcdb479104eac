"""Shell completion, driven as a shell drives it: a bkctl process with _BKCTL_COMPLETE=bash_complete and the words
typed so far (COMP_WORDS, COMP_CWORD), or bash itself running the script of `bkctl completion bash`.

It offers exactly the click tree (every command, every option of every command), file names for paths, and the
bookie ids and ledger ids of the cluster the command line names, read from ZooKeeper — nothing, within about a
second, when ZooKeeper cannot be reached.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import click
import pytest

from bkctl.cli import cli
from bkctl.completers import complete_bookie_ids, complete_ledger_ids, complete_sandbox_bookies
from bookie.client import BookKeeper

from helpers import shared_cluster


def complete(*words: str, env: dict | None = None) -> list[tuple[str, str]]:
    """What bkctl offers for the last of ``words`` (the one being typed): ``(type, value)`` pairs."""
    line = ["bkctl", *words]
    proc = subprocess.run(
        [sys.executable, "-m", "bkctl"],
        capture_output=True,
        text=True,
        timeout=30,
        env={
            **os.environ,
            **(env or {}),
            "_BKCTL_COMPLETE": "bash_complete",
            "COMP_WORDS": " ".join(line),
            "COMP_CWORD": str(len(line) - 1),
        },
    )
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    return [tuple(item.split(",", 1)) for item in proc.stdout.splitlines() if item]  # nothing: one empty line


def values(*words: str, env: dict | None = None) -> list[str]:
    return [value for kind, value in complete(*words, env=env) if kind == "plain"]


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


@pytest.fixture(scope="module")
def offered():
    """For every command path: what completing a word after it offers, and a word starting with '-'."""
    asks = [(path, typed) for path in TREE for typed in ("", "-")]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda ask: values(*ask[0], ask[1]), asks))
    return dict(zip(asks, answers, strict=True))


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
            if "BOOKIE" in shown:
                expected = complete_sandbox_bookies if path[0] == "sandbox" else complete_bookie_ids
            elif (shown.startswith(("ID", "[ID")) or "--ledger" in param.opts) and path not in OFFLINE:
                expected = complete_ledger_ids
            else:
                continue
            assert param._custom_shell_complete is expected, where
            checked += 1
    assert checked >= 20


@pytest.fixture(scope="module")
def live(zookeeper, tmp_path_factory):
    """Two bookies and three closed ledgers."""
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("completion"), 2) as harness:
        with BookKeeper(harness.service_uri) as bk:
            ledgers = []
            for _ in range(3):
                ledger = bk.create_ledger(1, 1, 1)
                ledger.add_entries([b"x"])
                ledger.close()
                ledgers.append(str(ledger.ledger_id))
        bookies = sorted(b.bookie_id for b in harness.bookies)
        yield harness.service_uri, bookies, ledgers


def test_bookie_ids_and_ledger_ids_complete_from_the_cluster(live):
    uri, bookies, ledgers = live
    assert sorted(values("-u", uri, "bookie", "info", "")) == bookies
    assert sorted(values("-u", uri, "bookie", "gc", bookies[0], "")) == bookies  # [BOOKIE]...
    assert sorted(values("-u", uri, "cluster", "check-impact", "--bookie", "")) == bookies
    assert values("-u", uri, "bookie", "recover", f"{bookies[0]},") == [f"{bookies[0]},{bookies[1]}"]
    assert sorted(values("-u", uri, "ledger", "read", "")) == sorted(ledgers)
    assert values("-u", uri, "ledger", "metadata", ledgers[2]) == [ledgers[2]]
    assert sorted(values("-u", uri, "ledger", "delete", ledgers[0], "")) == sorted(ledgers)
    assert sorted(values("-u", uri, "cluster", "check", "--ledger", "")) == sorted(ledgers)
    # the cluster as every command finds it: from BKCTL_SERVICE_URI, or the current context
    assert sorted(values("bookie", "info", "", env={"BKCTL_SERVICE_URI": uri})) == bookies
    context = ["config", "set-context", "live", "--service-uri", uri]
    assert subprocess.run([sys.executable, "-m", "bkctl", *context], capture_output=True).returncode == 0
    assert sorted(values("--context", "live", "ledger", "recover", "")) == sorted(ledgers)
    assert values("--context", "") == ["live"]


def test_bash_completes_a_bookie_id_after_its_colon(live):
    """bash cuts host:port into three words; bkctl's bash script completes the whole id anyway."""
    uri, bookies, _ = live
    host, port = bookies[0].rsplit(":", 1)
    typed = f"bkctl -u {uri} bookie info {host}:{port[:-1]}"
    script = subprocess.run(
        [sys.executable, "-m", "bkctl", "completion", "bash"], capture_output=True, text=True, check=True
    ).stdout
    driver = f"""
{script}
COMP_LINE='{typed}'; COMP_POINT=${{#COMP_LINE}}
read -ra COMP_WORDS <<< "${{COMP_LINE//:/ : }}"  # as bash cuts them (':' is in COMP_WORDBREAKS): the URI too
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
_bkctl_completion bkctl
printf '%s\\n' "${{COMP_WORDS[COMP_CWORD]}}" "${{COMPREPLY[@]}}"
"""
    path = f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"  # the script runs `bkctl`: this one
    proc = subprocess.run(
        ["bash", "-c", driver], capture_output=True, text=True, timeout=30, env={**os.environ, "PATH": path}
    )
    assert proc.stderr == ""
    word, *replies = proc.stdout.splitlines()
    assert word == port[:-1]  # what bash replaces: the word after the colon ...
    assert replies == [port]  # ... by the rest of the one bookie id that fits


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
