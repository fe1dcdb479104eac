"""The sandbox as a user runs it: real `bkctl` processes, a real ZooKeeper started and stopped by pid."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.exceptions import NoAuthError

from bookie.errors import ServiceUnavailable
from bookie.local.process import pid_alive
from bookie.meta.cookies import CookieStore, read_local_cookie
from bookie.meta.security import ZkSecurity
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

from support.waiting import wait_for

SPEC_LAYOUT = b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"


def bkctl(*args, env_dir, env=None, input=None, timeout=120):
    """bkctl on the sandbox of ``env_dir`` (``env``: more environment variables)."""
    return subprocess.run(
        [sys.executable, "-m", "bkctl", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "BKCTL_SANDBOX_DIR": str(env_dir), **(env or {})},
    )


def cluster_znodes(service_uri):
    with MetadataStore(parse_service_uri(service_uri)) as store:
        root = store.root
        return {
            name: store.zk.get(f"{root}/{name}")[0] if name else store.zk.get(root)[0]
            for name in ["", "available", "available/readonly", "INSTANCEID", "LAYOUT"]
        }, sorted(store.zk.get_children(root))


@pytest.fixture
def sandbox_dir(tmp_path):
    directory = tmp_path / "sandbox"
    yield directory
    bkctl("sandbox", "stop", env_dir=directory)  # whatever a failed test left running


def test_no_init_then_cluster_init_through_the_default_sandbox(sandbox_dir):
    started = bkctl("sandbox", "start", "--no-init", "-o", "json", env_dir=sandbox_dir)
    assert started.returncode == 0, started.stderr
    status = json.loads(started.stdout)
    assert status["stateDir"] == str(sandbox_dir)
    assert status["serviceUri"] == f"zk+hierarchical://{status['zookeeper']['address']}/ledgers"
    assert status["bookies"] == [] and pid_alive(status["zookeeper"]["pid"])
    with MetadataStore(parse_service_uri(status["serviceUri"])) as store:
        assert not store.zk.exists("/ledgers")

    init = bkctl("cluster", "init", env_dir=sandbox_dir)  # no -u: the running sandbox
    assert init.returncode == 0, init.stderr
    nodes, children = cluster_znodes(status["serviceUri"])
    assert children == ["INSTANCEID", "LAYOUT", "available"]
    assert nodes["LAYOUT"] == SPEC_LAYOUT and len(nodes["INSTANCEID"]) == 36
    assert nodes[""] == nodes["available"] == nodes["available/readonly"] == b""

    again = bkctl("cluster", "init", env_dir=sandbox_dir)
    assert again.returncode == 1 and "already initialised" in again.stderr
    assert cluster_znodes(status["serviceUri"]) == (nodes, children)

    stopped = bkctl("sandbox", "stop", env_dir=sandbox_dir)
    assert stopped.returncode == 0 and stopped.stdout == f"sandbox {sandbox_dir} stopped\n"
    assert not pid_alive(status["zookeeper"]["pid"])
    gone = bkctl("sandbox", "status", env_dir=sandbox_dir)
    assert (gone.returncode, gone.stderr) == (5, f"error: no sandbox is running in {sandbox_dir}\n")


def test_plain_start_initialises_and_restart_keeps_the_cluster(sandbox_dir):
    started = bkctl("sandbox", "start", "--bookies", "1", "-o", "json", env_dir=sandbox_dir)
    assert started.returncode == 0, started.stderr
    first = json.loads(started.stdout)
    nodes, children = cluster_znodes(first["serviceUri"])
    assert children == ["INSTANCEID", "LAYOUT", "available", "cookies"]  # cookies: the bookie's
    assert nodes["LAYOUT"] == SPEC_LAYOUT and nodes[""] == nodes["available/readonly"] == b""

    twice = bkctl("sandbox", "start", env_dir=sandbox_dir)
    assert twice.returncode == 1 and "already running" in twice.stderr

    assert bkctl("sandbox", "stop", env_dir=sandbox_dir).returncode == 0
    restarted = bkctl("sandbox", "start", "-o", "json", env_dir=sandbox_dir)  # at once: ZooKeeper loads its data
    assert restarted.returncode == 0, restarted.stderr
    second = json.loads(restarted.stdout)
    assert second["serviceUri"] == first["serviceUri"]  # same port, same data
    assert second["bookies"][0]["bookieId"] == first["bookies"][0]["bookieId"]  # the same bookie, same port
    assert len(second["bookies"]) == 3  # plus new ones up to the default 3
    assert cluster_znodes(second["serviceUri"])[0]["INSTANCEID"] == nodes["INSTANCEID"]
    status = json.loads(bkctl("sandbox", "status", "-o", "json", env_dir=sandbox_dir).stdout)
    assert status == second


def test_bookie_fault_drills_and_bench(sandbox_dir):
    started = bkctl(
        "sandbox", "start", "--bookies", "2", "--set", "journalMaxGroupWaitMSec=1", "-o", "json", env_dir=sandbox_dir
    )
    assert started.returncode == 0, started.stderr
    status = json.loads(started.stdout)
    assert [b["state"] for b in status["bookies"]] == ["writable", "writable"]
    first = status["bookies"][0]
    assert set(first) >= {"bookieId", "pid", "port", "state", "journalDir", "ledgerDir"}
    assert "journalMaxGroupWaitMSec=1" in (sandbox_dir / "bookie-1" / "bk_server.conf").read_text()

    killed = bkctl("sandbox", "stop-bookie", "1", "--kill", env_dir=sandbox_dir)
    assert killed.stdout == f"bookie/{first['bookieId']} killed\n" and not pid_alive(first["pid"])
    after = json.loads(bkctl("sandbox", "status", "-o", "json", env_dir=sandbox_dir).stdout)
    assert [b["state"] for b in after["bookies"]] == ["stopped", "writable"]
    again = bkctl("sandbox", "stop-bookie", "1", env_dir=sandbox_dir)
    assert again.returncode == 5 and "is not running" in again.stderr

    restarted = bkctl("sandbox", "start-bookie", first["bookieId"], env_dir=sandbox_dir)
    assert restarted.returncode == 0, restarted.stderr
    after = json.loads(bkctl("sandbox", "status", "-o", "json", env_dir=sandbox_dir).stdout)
    assert [b["state"] for b in after["bookies"]] == ["writable", "writable"]

    bench = bkctl(
        "bench",
        "bookie",
        "--bookie",
        first["bookieId"],
        "--entries",
        "3000",
        "--batch",
        "100",
        "-o",
        "json",
        env_dir=sandbox_dir,
    )
    assert bench.returncode == 0, bench.stderr
    result = json.loads(bench.stdout)
    assert set(result) >= {"entries", "seconds", "entriesPerSec", "mbPerSec", "latencyMs", "rawEntriesPerSec", "ratio"}
    assert result["entries"] == 3000 and set(result["latencyMs"]) == {"p50", "p95", "p99", "max"}
    unknown = bkctl("sandbox", "start-bookie", "9", env_dir=sandbox_dir)
    assert unknown.returncode == 5 and "no sandbox bookie '9'" in unknown.stderr


def test_sandbox_with_autorecovery(sandbox_dir):
    started = bkctl("sandbox", "start", "--bookies", "1", "--autorecovery", "-o", "json", env_dir=sandbox_dir)
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["autorecovery"]["pid"]
    assert pid_alive(pid)
    wait_for(lambda: bkctl("autorecovery", "who-is-auditor", env_dir=sandbox_dir).returncode == 0, "an auditor", 30)
    assert bkctl("sandbox", "stop", env_dir=sandbox_dir).returncode == 0
    assert not pid_alive(pid)


# ---- start, stop and start-bookie from whatever state the processes are in (one sandbox for the scenarios) ----


def ours(directory):
    """The live processes whose command line names the sandbox directory, by pid: its servers (a zombie has an
    empty command line)."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().decode().split("\0")[:-1] if entry.name.isdigit() else []
        except OSError:
            continue
        if any(str(directory) in a for a in args):
            found[int(entry.name)] = args
    return found


def assert_running_once(directory, bookies):
    """One ZooKeeper and ``bookies`` bookies run, each once, and the state file records exactly those pids."""
    state = json.loads((directory / "sandbox.json").read_text())
    running = ours(directory)
    zookeepers = [pid for pid, args in running.items() if str(directory / "zookeeper" / "zoo.cfg") in args]
    assert zookeepers == [state["zk_pid"]]
    by_conf = {}
    for pid, args in running.items():
        if "bookie.server" in args:  # the core's bookie process, as the sandbox starts it
            by_conf.setdefault(args[args.index("--conf") + 1], []).append(pid)
    assert by_conf == {str(Path(b["directory"]) / "bk_server.conf"): [b["pid"]] for b in state["bookies"]}
    assert len(by_conf) == bookies and len(running) == bookies + 1
    status = json.loads(bkctl("sandbox", "status", "-o", "json", env_dir=directory).stdout)
    assert [b["state"] for b in status["bookies"]] == ["writable"] * bookies
    return status


@pytest.fixture(scope="module")
def shared_sandbox(tmp_path_factory):
    """A 2-bookie sandbox; each scenario leaves it running, every bookie writable."""
    directory = tmp_path_factory.mktemp("shared") / "sandbox"
    started = bkctl("sandbox", "start", "--bookies", "2", "--set", "journalMaxGroupWaitMSec=1", env_dir=directory)
    assert started.returncode == 0, started.stderr
    yield directory
    bkctl("sandbox", "stop", env_dir=directory)


def test_start_after_zookeeper_was_killed_adopts_the_bookies(shared_sandbox):
    before = assert_running_once(shared_sandbox, 2)
    os.kill(before["zookeeper"]["pid"], signal.SIGKILL)
    wait_for(lambda: not pid_alive(before["zookeeper"]["pid"]), what="ZooKeeper gone")

    # Not "no sandbox is running": the sandbox, ZooKeeper down, its bookies up; exit 6 (unreachable)
    status = bkctl("sandbox", "status", "-o", "json", env_dir=shared_sandbox)
    assert status.returncode == 6 and status.stderr == (
        f"error: the ZooKeeper of the sandbox in {shared_sandbox} is not running, the rest of it is: "
        "`bkctl sandbox start` starts it\n"
    )
    down = json.loads(status.stdout)
    assert down["zookeeper"]["pid"] is None
    assert [(b["state"], b["pid"]) for b in down["bookies"]] == [("running", b["pid"]) for b in before["bookies"]]
    table = bkctl("sandbox", "status", env_dir=shared_sandbox)
    assert table.returncode == 6 and f"{before['zookeeper']['address']} (not running)" in table.stdout

    started = bkctl("sandbox", "start", "--bookies", "2", env_dir=shared_sandbox)
    assert started.returncode == 0, started.stderr
    after = assert_running_once(shared_sandbox, 2)  # no duplicate bookie, no pid lost
    assert after["serviceUri"] == before["serviceUri"] and after["zookeeper"]["pid"] != before["zookeeper"]["pid"]
    # adopted, not restarted: they reconnect to the new ZooKeeper by themselves
    assert [b["pid"] for b in after["bookies"]] == [b["pid"] for b in before["bookies"]]
    probe = bkctl("ledger", "simpletest", "-e", "2", "-w", "2", "-a", "2", "-n", "10", env_dir=shared_sandbox)
    assert probe.returncode == 0, probe.stderr


def test_start_waits_for_a_bookie_whose_session_expired_while_zookeeper_was_down(shared_sandbox):
    """A restarted ZooKeeper restores every session with its registration; a bookie that cannot reconnect in time
    (here frozen) loses it when the session expires. `start` waits until the bookie registers on a live session,
    not for the restored node, which would let a bookie drop out of `status` seconds after `start` said it runs."""
    before = assert_running_once(shared_sandbox, 2)
    frozen, frozen_id = before["bookies"][1]["pid"], before["bookies"][1]["bookieId"]
    os.kill(before["zookeeper"]["pid"], signal.SIGKILL)
    wait_for(lambda: not pid_alive(before["zookeeper"]["pid"]), what="ZooKeeper gone")
    os.kill(frozen, signal.SIGSTOP)
    try:
        start = subprocess.Popen(
            [sys.executable, "-m", "bkctl", "sandbox", "start", "--bookies", "2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "BKCTL_SANDBOX_DIR": str(shared_sandbox)},
        )
        # the bookie's session (10 s, zkTimeout) expires while it is frozen: its node goes, and start still waits
        wait_for(lambda: unregistered(shared_sandbox, frozen_id), "the frozen bookie's node gone", 40)
        assert start.poll() is None
    finally:
        os.kill(frozen, signal.SIGCONT)
    _, err = start.communicate(timeout=60)
    assert start.returncode == 0, err
    after = assert_running_once(shared_sandbox, 2)  # every bookie writable the moment start returns
    assert [b["pid"] for b in after["bookies"]] == [b["pid"] for b in before["bookies"]]


def unregistered(directory, bookie_id: str) -> bool:
    """Whether the sandbox's ZooKeeper answers and has no registration of the bookie (a loaded machine may take
    longer to start ZooKeeper than a client waits to connect)."""
    try:
        with MetadataStore(parse_service_uri(service_uri(directory))) as store:
            return bookie_id not in store.children(f"{store.root}/available")
    except ServiceUnavailable:
        return False


def test_start_bookie_right_after_an_external_kill(shared_sandbox):
    bookie = assert_running_once(shared_sandbox, 2)["bookies"][0]
    os.kill(bookie["pid"], signal.SIGKILL)
    time.sleep(0.5)  # the scenario itself: an operator's next command half a second later (a zombie, or reaped)

    started = bkctl("sandbox", "start-bookie", "1", env_dir=shared_sandbox)
    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith(f"bookie/{bookie['bookieId']} started (pid ")
    assert assert_running_once(shared_sandbox, 2)["bookies"][0]["pid"] != bookie["pid"]


def test_start_after_decommission_brings_the_bookie_back_new(shared_sandbox):
    bookie = assert_running_once(shared_sandbox, 2)["bookies"][1]
    stopped = bkctl("sandbox", "stop-bookie", "2", env_dir=shared_sandbox)
    assert (stopped.returncode, stopped.stderr) == (0, "")  # a clean stop: it unregistered (no kill after a timeout)
    gone = bkctl("bookie", "decommission", bookie["bookieId"], "--yes", env_dir=shared_sandbox)
    assert gone.returncode == 0, gone.stderr

    started = bkctl("sandbox", "start", "--bookies", "2", env_dir=shared_sandbox)
    assert started.returncode == 0, started.stderr
    assert f"warning: bookie {bookie['bookieId']} was decommissioned" in started.stderr
    status = assert_running_once(shared_sandbox, 2)
    with MetadataStore(parse_service_uri(status["serviceUri"])) as store:
        assert CookieStore(store).read(bookie["bookieId"])  # a new cookie, in ZooKeeper again


def test_set_on_a_running_bookie_says_it_keeps_its_value(shared_sandbox):
    running = assert_running_once(shared_sandbox, 2)["bookies"][0]
    assert bkctl("sandbox", "stop-bookie", "2", env_dir=shared_sandbox).returncode == 0

    started = bkctl("sandbox", "start", "--bookies", "2", "--set", "journalMaxGroupWaitMSec=2", env_dir=shared_sandbox)
    assert started.returncode == 0, started.stderr
    assert started.stderr == (
        f"warning: bookies {running['bookieId']} run on with their earlier journalMaxGroupWaitMSec: the new values "
        "apply when each restarts (`bkctl sandbox stop-bookie N`, then `start-bookie N`)\n"
    )
    assert_running_once(shared_sandbox, 2)
    for bookie in json.loads((shared_sandbox / "sandbox.json").read_text())["bookies"]:
        assert "journalMaxGroupWaitMSec=2" in (Path(bookie["directory"]) / "bk_server.conf").read_text()


def test_a_sandbox_in_another_dir_is_found_by_bkctl_sandbox_dir(sandbox_dir, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    started = bkctl("sandbox", "start", "--no-init", "--dir", str(sandbox_dir), env_dir=elsewhere)
    assert started.returncode == 0, started.stderr
    assert started.stderr == f"other bkctl commands use this sandbox with: export BKCTL_SANDBOX_DIR={sandbox_dir}\n"
    lost = bkctl("cluster", "info", env_dir=elsewhere)
    assert lost.returncode == 6 and lost.stderr.count("\n") == 1
    assert f"no sandbox running in {elsewhere}" in lost.stderr and "set BKCTL_SANDBOX_DIR=D" in lost.stderr
    found = bkctl("sandbox", "status", env_dir=sandbox_dir)
    assert found.returncode == 0, found.stderr


def test_stop_twice_says_nothing_to_do(sandbox_dir):
    nothing = f"sandbox {sandbox_dir}: nothing running, nothing to do\n"
    never_started = bkctl("sandbox", "stop", env_dir=sandbox_dir)
    assert (never_started.returncode, never_started.stdout) == (0, nothing)
    assert bkctl("sandbox", "start", "--no-init", env_dir=sandbox_dir).returncode == 0
    first = bkctl("sandbox", "stop", env_dir=sandbox_dir)
    assert (first.returncode, first.stdout) == (0, f"sandbox {sandbox_dir} stopped\n")
    second = bkctl("sandbox", "stop", env_dir=sandbox_dir)
    assert (second.returncode, second.stdout, second.stderr) == (0, nothing, "")


def test_concurrent_starts_start_one_sandbox(sandbox_dir):
    starts = [
        subprocess.Popen(
            [sys.executable, "-m", "bkctl", "sandbox", "start", "--no-init"],
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "BKCTL_SANDBOX_DIR": str(sandbox_dir)},
        )
        for _ in range(2)
    ]
    results = sorted((p.wait(120), p.stderr.read()) for p in starts)
    assert [code for code, _ in results] == [0, 1] and "already running" in results[1][1]
    state = json.loads((sandbox_dir / "sandbox.json").read_text())
    assert list(ours(sandbox_dir)) == [state["zk_pid"]]


def test_a_half_written_state_file_is_rebuilt_from_the_directory(sandbox_dir):
    assert bkctl("sandbox", "start", "--no-init", env_dir=sandbox_dir).returncode == 0
    state_file = sandbox_dir / "sandbox.json"
    zk_pid = json.loads(state_file.read_text())["zk_pid"]
    state_file.write_text(state_file.read_text()[:40])  # as a crash in the middle of a non-atomic write leaves it

    status = bkctl("sandbox", "status", "-o", "json", env_dir=sandbox_dir)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["zookeeper"]["pid"] == zk_pid
    stopped = bkctl("sandbox", "stop", env_dir=sandbox_dir)
    assert (stopped.returncode, stopped.stdout) == (0, f"sandbox {sandbox_dir} stopped\n")
    assert not pid_alive(zk_pid) and ours(sandbox_dir) == {}


def test_a_bookie_without_cookie_that_ledgers_name_is_not_formatted(shared_sandbox):
    """Only a decommissioned bookie is formatted: with its cookie deleted by hand while a ledger still names it,
    its data may be the only copy, and start-bookie refuses, saying what to do."""
    bookie = assert_running_once(shared_sandbox, 2)["bookies"][1]
    ledger = subprocess.run(
        [sys.executable, "-m", "bkctl", "ledger", "create", "-e", "2", "-w", "2", "-a", "2", "--input", "-"],
        input="a\nb\n",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "BKCTL_SANDBOX_DIR": str(shared_sandbox)},
    )
    assert ledger.returncode == 0, ledger.stderr
    assert bkctl("sandbox", "stop-bookie", "2", env_dir=shared_sandbox).returncode == 0
    journal = Path(bookie["journalDir"])
    with MetadataStore(parse_service_uri(service_uri(shared_sandbox))) as store:
        cookies = CookieStore(store)
        cookie, _ = cookies.read(bookie["bookieId"])
        cookies.delete(bookie["bookieId"])
        try:
            refused = bkctl("sandbox", "start-bookie", "2", env_dir=shared_sandbox)
            assert refused.returncode == 1 and "names it: run `bkctl bookie decommission" in refused.stderr
            assert read_local_cookie(journal) == cookie  # its directories untouched
        finally:
            cookies.write(cookie)  # as it was: the scenarios after this one find the sandbox whole
    assert bkctl("sandbox", "start-bookie", "2", env_dir=shared_sandbox).returncode == 0
    assert_running_once(shared_sandbox, 2)
    ledger_id = ledger.stdout.strip()  # so that no later scenario finds a ledger on the bookie
    assert bkctl("ledger", "delete", ledger_id, "--yes", env_dir=shared_sandbox).returncode == 0


def service_uri(directory):
    state = json.loads((directory / "sandbox.json").read_text())
    return f"zk+hierarchical://127.0.0.1:{state['zk_port']}/ledgers"


def test_a_secure_sandbox_requires_tls_and_bkctl_uses_its_admin_certificate(sandbox_dir):
    started = bkctl("sandbox", "start", "--secure", "--bookies", "3", "-o", "json", env_dir=sandbox_dir)
    assert started.returncode == 0, started.stderr
    status = json.loads(started.stdout)
    try:
        assert status["secure"] is True
        tls = sandbox_dir / "tls"
        assert tls.stat().st_mode & 0o777 == 0o700
        private = {p.name for p in tls.iterdir() if p.stat().st_mode & 0o777 == 0o600}
        assert {"ca-key.pem", "bookie-key.pem", "bkctl-key.pem", "client-key.pem", "bookie.p12"} <= private
        assert all(p.stat().st_mode & 0o077 == 0 for p in tls.glob("*key*"))
        for bookie in status["bookies"]:  # holds the HTTPS stores' password
            assert Path(bookie["journalDir"]).parent.joinpath("bk_server.conf").stat().st_mode & 0o777 == 0o600

        probe = bkctl("-v", "ledger", "simpletest", "-n", "20", env_dir=sandbox_dir)  # TLS by itself, as an admin
        assert probe.returncode == 0, probe.stderr
        assert "TLS to the bookies (from the secure sandbox)" in probe.stderr
        assert bkctl("bookie", "gc", "--all", env_dir=sandbox_dir).returncode == 0
        # Spark's workers build clients of their own: with the sandbox's ZooKeeper login and admin certificate
        created = bkctl("ledger", "create", "-e", "2", "-w", "2", "-a", "2", "--input", "-", input="a\nb\nc\n",
                        env_dir=sandbox_dir)  # fmt: skip
        assert created.returncode == 0, created.stderr
        out = sandbox_dir.parent / "export"
        exported = bkctl("ledger", "export", created.stdout.strip(), "--to", str(out), "-o", "json",
                         env_dir=sandbox_dir, timeout=600)  # fmt: skip
        assert exported.returncode == 0, exported.stderr
        assert json.loads(exported.stdout)["entries"] == 3

        # ZooKeeper: every znode is the sandbox user's alone; a session without its login reads nothing
        uri = status["serviceUri"]
        digest = sandbox_dir / "zk-digest"
        assert digest.stat().st_mode & 0o777 == 0o600 and digest.read_text().startswith("sandbox:")
        with MetadataStore(parse_service_uri(uri), security=ZkSecurity()) as anonymous:
            with pytest.raises(NoAuthError):
                anonymous.zk.get_children(f"{anonymous.root}/available")
            with pytest.raises(NoAuthError):
                anonymous.zk.create(f"{anonymous.root}/squatted", b"")
        outsider = bkctl("-u", uri, "bookies", "list", env_dir=sandbox_dir)
        assert outsider.returncode == 4 and "ZooKeeper" in outsider.stderr, outsider.stderr
        assert digest.read_text().split(":", 1)[1] not in outsider.stderr + probe.stderr

        # logged in to ZooKeeper, but no certificate, or an application's: TLS and roles decide
        login = {"BKCTL_ZK_ENABLE_SECURITY": "true", "BKCTL_ZK_DIGEST_AUTH_FILE": str(digest)}
        plain = bkctl("-u", uri, "ledger", "simpletest", "-n", "5", env_dir=sandbox_dir, env=login)
        assert plain.returncode == 4 and "requires TLS with a client certificate" in plain.stderr
        application = ["--tls-trust-store", str(tls / "ca.pem"), "--tls-cert", str(tls / "client.pem")]
        application += ["--tls-key", str(tls / "client-key.pem")]
        written = bkctl("-u", uri, *application, "ledger", "simpletest", "-n", "5", env_dir=sandbox_dir, env=login)
        assert written.returncode == 0, written.stderr
        refused = bkctl("-u", uri, *application, "bookie", "gc", "--all", env_dir=sandbox_dir, env=login)
        assert refused.returncode == 4 and "role 'client' may not run admin operations" in refused.stderr

        again = bkctl("sandbox", "stop", env_dir=sandbox_dir)
        assert again.returncode == 0
        restarted = bkctl("sandbox", "start", "-o", "json", env_dir=sandbox_dir)  # secure it stays
        assert restarted.returncode == 0 and json.loads(restarted.stdout)["secure"] is True
    finally:
        bkctl("sandbox", "stop", env_dir=sandbox_dir)


def test_a_secure_sandbox_bookie_recovers_over_https_with_its_own_certificate(sandbox_dir):
    """The HTTP admin API's recover runs on the bookie's own client, which must reach the TLS-only bookies with the
    bookie's certificate (role bookie, an admin role of the sandbox): in the clear, every read is refused."""
    import ssl
    import urllib.request

    started = bkctl("sandbox", "start", "--secure", "--bookies", "4", "-o", "json", env_dir=sandbox_dir)
    assert started.returncode == 0, started.stderr
    try:
        created = subprocess.run(
            [sys.executable, "-m", "bkctl", "ledger", "create", "-e", "3", "-w", "3", "-a", "3", "--input", "-"],
            input="a\nb\n", capture_output=True, text=True, timeout=120,
            env={**os.environ, "BKCTL_SANDBOX_DIR": str(sandbox_dir)},
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        ledger = created.stdout.strip()

        def ensemble() -> list[str]:
            shown = bkctl("ledger", "metadata", ledger, "-o", "json", env_dir=sandbox_dir)
            return json.loads(shown.stdout)["segments"][-1]["ensemble"]

        bookies = json.loads(started.stdout)["bookies"]
        lost = ensemble()[0]
        number = next(n for n, b in enumerate(bookies, 1) if b["bookieId"] == lost)
        assert bkctl("sandbox", "stop-bookie", str(number), env_dir=sandbox_dir).returncode == 0
        spare = next(b for b in bookies if b["bookieId"] not in ensemble())
        tls = sandbox_dir / "tls"
        context = ssl.create_default_context(cafile=str(tls / "ca.pem"))
        context.check_hostname = False
        context.load_cert_chain(str(tls / "bkctl.pem"), str(tls / "bkctl-key.pem"))
        request = urllib.request.Request(
            f"https://127.0.0.1:{spare['httpPort']}/api/v1/autorecovery/bookie",
            data=json.dumps({"bookie_src": [lost], "delete_cookie": False}).encode(),
            method="PUT",
        )
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            assert answer.status == 200
        wait_for(lambda: lost not in ensemble(), f"ledger {ledger} re-replicated off {lost}", timeout=30)
    finally:
        bkctl("sandbox", "stop", env_dir=sandbox_dir)
