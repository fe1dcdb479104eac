"""bkctl config: contexts as kubectl's, in $XDG_CONFIG_HOME/bkctl/config.yaml (the isolation fixture points it at
the test's own directory): editing them, and their errors."""

from __future__ import annotations

import json
import stat
import subprocess
import sys

import pytest
import yaml

from support.cli import dead_uri


def ok(result, stdout: str) -> None:
    assert (result.exit_code, result.stderr, result.stdout) == (0, "", stdout)


def test_set_use_get_and_delete_contexts(bkctl, config_file):
    ok(
        bkctl(
            "config",
            "set-context",
            "prod",
            "--service-uri",
            "zk+hierarchical://zk1:2181;zk2:2181/ledgers",
            "--http-port",
            "8080",
        ),
        "context/prod created\n",
    )
    ok(
        bkctl("config", "set-context", "dev", "--service-uri", "zk://127.0.0.1:2181/ledgers", "--timeout", "2"),
        "context/dev created\n",
    )
    ok(bkctl("config", "use-context", "prod"), "context/prod is current\n")
    ok(bkctl("config", "current-context"), "prod\n")
    ok(bkctl("config", "set-context", "prod", "--timeout", "5"), "context/prod modified\n")  # the rest is kept
    ok(
        bkctl("config", "get-contexts"),
        (
            "CURRENT   NAME   SERVICE-URI                                   HTTP-PORT   TIMEOUT\n"
            "          dev    zk://127.0.0.1:2181/ledgers                   <none>      2.0\n"
            "*         prod   zk+hierarchical://zk1:2181;zk2:2181/ledgers   8080        5.0\n"
        ),
    )
    no_tls = dict.fromkeys(("tlsTrustStore", "tlsCert", "tlsKey", "tlsKeyPasswordFile", "tlsHostnameVerification"))
    assert json.loads(bkctl("config", "get-contexts", "-o", "json").stdout) == [
        {
            "name": "dev",
            "current": False,
            "serviceUri": "zk://127.0.0.1:2181/ledgers",
            "httpPort": None,
            "timeout": 2.0,
            **no_tls,
        },
        {
            "name": "prod",
            "current": True,
            "serviceUri": "zk+hierarchical://zk1:2181;zk2:2181/ledgers",
            "httpPort": 8080,
            "timeout": 5.0,
            **no_tls,
        },
    ]
    assert yaml.safe_load(config_file.read_text()) == {
        "current-context": "prod",
        "contexts": {
            "dev": {"service-uri": "zk://127.0.0.1:2181/ledgers", "timeout": 2.0},
            "prod": {"service-uri": "zk+hierarchical://zk1:2181;zk2:2181/ledgers", "http-port": 8080, "timeout": 5.0},
        },
    }
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(config_file.parent.stat().st_mode) == 0o700
    assert [p.name for p in config_file.parent.iterdir() if p.name.startswith(".config.yaml.")] == [
        ".config.yaml.lock"
    ]  # no temporary file left behind

    result = bkctl("config", "delete-context", "prod")
    assert (result.exit_code, result.stdout) == (0, "context/prod deleted\n")
    assert result.stderr == ("warning: prod was the current context: none is now (`bkctl config use-context NAME`)\n")
    result = bkctl("config", "current-context")
    assert (result.exit_code, result.stderr) == (
        5,
        f"error: no current context in {config_file} (`bkctl config use-context NAME` sets one)\n",
    )
    ok(bkctl("config", "delete-context", "dev"), "context/dev deleted\n")
    result = bkctl("config", "get-contexts")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == (
        f"no contexts in {config_file} (`bkctl config set-context NAME --service-uri URI` adds one)\n"
    )


def test_dry_runs_change_nothing(bkctl, config_file):
    ok(
        bkctl("config", "set-context", "a", "--service-uri", "zk://h:1/l", "--dry-run"),
        "context/a would be created (dry run)\n",
    )
    assert not config_file.parent.exists()
    ok(bkctl("config", "set-context", "a", "--service-uri", "zk://h:1/l"), "context/a created\n")
    before = config_file.read_text()
    ok(bkctl("config", "set-context", "a", "--http-port", "1", "--dry-run"), "context/a would be modified (dry run)\n")
    ok(bkctl("config", "use-context", "a", "--dry-run"), "context/a would be current (dry run)\n")
    ok(bkctl("config", "delete-context", "a", "--dry-run"), "context/a would be deleted (dry run)\n")
    assert config_file.read_text() == before


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["use-context", "nope"], 5, "no context 'nope' in {file} (`bkctl config get-contexts` lists them)"),
        (["delete-context", "nope"], 5, "no context 'nope' in {file} (`bkctl config get-contexts` lists them)"),
        (["set-context", "new", "--timeout", "3"], 2, "context new is new: give its --service-uri"),
        (["set-context", "a"], 2, "nothing to set: give --service-uri, --http-port, --timeout or --tls-*"),
        (
            ["set-context", "a", "--service-uri", "zk://h:99999/l"],
            2,
            "malformed service URI 'zk://h:99999/l': bad port '99999'; expected zk+hierarchical://HOST:PORT[;HOST:PORT...]"
            "/ledgers",
        ),
        (
            ["set-context", "a b", "--service-uri", "zk://h/l"],
            2,
            "bad context name 'a b': letters, digits and _.@:- (up to 128), starting with a letter or digit",
        ),
        (
            ["set-context", "a", "--http-port", "0"],
            2,
            "Invalid value for '--http-port': 0 is not in the range 1<=x<=65535.",
        ),
        (
            ["set-context", "a", "--timeout", "0"],
            2,
            "Invalid value for '--timeout': 0.0 is not in the range 0<x<=86400.",
        ),
    ],
)
def test_bad_input_is_one_line(bkctl, config_file, args, code, message):
    result = bkctl("config", *args)
    assert (result.exit_code, result.stdout, result.stderr) == (
        code,
        "",
        f"error: {message.format(file=config_file)}\n",
    )
    assert not config_file.exists()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("contexts: [\n", "not valid YAML at line 2, column 1: expected the node content, but found '<stream end>'"),
        ("- a\n", "not a mapping of current-context and contexts"),
        (
            "contexts:\n  a: {service-uri: 'zk://h/l'}\n  b: {service-uri: 'zk://h/m'}\n  a: {service-uri: 'zk://i/l'}\n",
            "not valid YAML at line 4, column 3: duplicate key 'a' (first at line 2)",
        ),
        (
            "contexts:\n  a: {service-uri: 'zk://h/l', timeout: 5, timeout: 9}\n",
            "not valid YAML at line 2, column 44: duplicate key 'timeout' (first at line 2)",
        ),
        ("clusters: {}\n", "unknown key 'clusters' (this bkctl knows current-context, contexts)"),
        ("contexts: []\n", "contexts is not a mapping of names to settings"),
        ("contexts:\n  a: zk://h/l\n", "context 'a': not a mapping of settings"),
        ("contexts:\n  a: {http-port: 1}\n", "context 'a': no service-uri"),
        (
            "contexts:\n  a: {service-uri: 'zk://h/l', tls: {ca: x}}\n",
            "context 'a': unknown key 'tls' (this bkctl knows service-uri, http-port, timeout, tls-trust-store, "
            "tls-cert, tls-key, tls-key-password-file, tls-hostname-verification)",
        ),
        (
            "contexts:\n  a: {service-uri: 'zk://h/l', tls-key: key.pem}\n",
            "context 'a': tls-key 'key.pem' is not an absolute path",
        ),
        (
            "contexts:\n  a: {service-uri: 'zk://h/l', http-port: '80'}\n",
            "context 'a': http-port '80' is not a port (1-65535)",
        ),
        (
            "contexts:\n  a: {service-uri: 'zk://h/l', timeout: -1}\n",
            "context 'a': timeout -1 is not a number of seconds (0 < S <= 86400)",
        ),
        (
            "contexts:\n  a: {service-uri: 'zk+x://h/l'}\n",
            "context 'a': unknown ledger manager 'x' in 'zk+x://h/l': expected one of hierarchical, longhierarchical, "
            "legacyhierarchical",
        ),
        (
            "current-context: b\ncontexts:\n  a: {service-uri: 'zk://h/l'}\n",
            "current-context 'b' names no context in the file",
        ),
    ],
)
def test_a_malformed_file_is_one_line_naming_it_exit_2(bkctl, config_file, text, problem):
    config_file.parent.mkdir(parents=True)
    config_file.write_text(text)
    config_file.chmod(0o600)
    for args in (["config", "get-contexts"], ["cluster", "info"], ["config", "use-context", "a"]):
        result = bkctl(*args)
        assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"error: {config_file}: {problem}\n")
    # a cluster named on the command line does not need the file
    assert bkctl("--timeout", "0.2", "-u", dead_uri(), "cluster", "info").exit_code == 6


def test_a_file_readable_by_others_is_made_private_with_a_warning(bkctl, config_file):
    config_file.parent.mkdir(parents=True)
    config_file.write_text("contexts:\n  a: {service-uri: 'zk://h/l'}\n")
    config_file.chmod(0o644)
    result = bkctl("config", "get-contexts", "-o", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)[0]["name"] == "a"
    assert result.stderr == f"warning: {config_file} was readable by others (mode 0644): made private (0600)\n"
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    assert bkctl("config", "get-contexts").stderr == ""


def test_the_file_is_under_xdg_config_home_else_home(bkctl, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for xdg in ("relative/dir", ""):  # a relative XDG_CONFIG_HOME is ignored, as the XDG specification says
        monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
        name = f"c{len(xdg)}"
        ok(bkctl("config", "set-context", name, "--service-uri", "zk://h/l"), f"context/{name} created\n")
    assert yaml.safe_load((tmp_path / "home/.config/bkctl/config.yaml").read_text())["contexts"].keys() == {"c0", "c12"}


def test_concurrent_edits_all_land(config_file):
    """The file is read and replaced under a lock: two processes adding contexts at once lose none."""
    script = (
        "import sys\nfrom bkctl.cli import cli\n"
        "for i in range(10):\n"
        "    args = ['config', 'set-context', f'{sys.argv[1]}{i}', '--service-uri', 'zk://h/l']\n"
        "    cli(args, standalone_mode=False)\n"
    )
    writers = [subprocess.Popen([sys.executable, "-c", script, name], stdout=subprocess.DEVNULL) for name in "ab"]
    assert [w.wait(60) for w in writers] == [0, 0]
    assert len(yaml.safe_load(config_file.read_text())["contexts"]) == 20


def test_the_context_timeout_applies_and_the_option_beats_it(bkctl, config_file):
    dead = dead_uri()
    address = dead.split("/")[2]
    bkctl("config", "set-context", "dead", "--service-uri", dead, "--timeout", "0.5")
    result = bkctl("--context", "dead", "ledger", "list")
    assert (result.exit_code, result.stderr) == (
        6,
        f"error: cannot reach ZooKeeper at {address} (gave up after 0.5 s)\n",
    )
    result = bkctl("--timeout", "1", "--context", "dead", "ledger", "list")
    assert result.stderr == f"error: cannot reach ZooKeeper at {address} (gave up after 1 s)\n"
