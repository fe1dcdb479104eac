"""Who a bookie is and where it listens, in BookKeeper's keys with BookKeeper's meaning, on real bookie processes:
listeningInterface names an interface, a loopback bookie address needs allowLoopback, useHostNameAsBookieID names
the bookie by host name; a setting that cannot be honoured is refused in one line and leaves nothing behind."""

import ipaddress
import socket
import subprocess
import sys
import time
from pathlib import Path

from bookie.local.bookies import LocalBookie
from bookie.local.process import spawn
from bookie.meta.cookies import CookieStore
from bookie.meta.registration import BookieRegistry
from bookie.server.network import interfaces

# listeningInterface=lo without the sandbox's advertisedAddress: the bookie address comes from the interface
FROM_LO = {"listeningInterface": "lo", "advertisedAddress": "", "allowLoopback": "true"}


def run_bookie(conf):
    return subprocess.run(
        [sys.executable, "-m", "bkctl", "bookie", "run", "--conf", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def listening(port: int) -> set[str]:
    """The local addresses of the listening TCP sockets on ``port`` (/proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:  # LISTEN
                raw = bytes.fromhex(address)  # 32-bit words in host (little-endian) order
                ip = ipaddress.ip_address(b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4)))
                found.add(str(getattr(ip, "ipv4_mapped", None) or ip))  # gRPC binds IPv4 as ::ffff:a.b.c.d
    return found


def registered_id(store, pid: int, timeout: float = 30) -> str:
    """The id under which the bookie process ``pid`` registered (whatever host it took)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for bookie in BookieRegistry(store).list(writable=True, readonly=True):
            if bookie.info and bookie.info.properties.get("pid") == str(pid):
                return bookie.bookie_id
        time.sleep(0.1)
    raise AssertionError(f"no bookie with pid {pid} registered within {timeout} s")


def nothing_left(store, bookie) -> bool:
    """No cookie in ZooKeeper, and nothing in the bookie's directories."""
    return CookieStore(store).list() == [] and not any(Path(d).exists() for d in bookie.data_dirs)


def test_listening_interface_lo_binds_127_0_0_1_only(harness, cluster, tmp_path):
    bookie = LocalBookie.create(1, tmp_path / "bookie-1", harness.service_uri, FROM_LO)
    harness.bookies.append(bookie)
    bookie.start()
    # lo's address has the reverse name localhost (/etc/hosts), which resolves to 127.0.0.1: the bookie address
    assert registered_id(cluster, bookie.pid) == f"127.0.0.1:{bookie.port}"
    assert listening(bookie.port) == {"127.0.0.1"}
    assert listening(bookie.admin_port) == {"127.0.0.1"}  # bkctlAdminPort binds like the bookie port
    assert CookieStore(cluster).read(f"127.0.0.1:{bookie.port}")[0].bookie_id == f"127.0.0.1:{bookie.port}"


def test_an_unknown_interface_is_refused_in_one_line_and_writes_nothing(harness, cluster, tmp_path):
    bookie = LocalBookie.create(1, tmp_path / "bookie-1", harness.service_uri, {"listeningInterface": "nope0"})
    result = run_bookie(bookie.conf_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: listeningInterface=nope0: no such network interface on this machine (it has {', '.join(interfaces())})"
    ]
    assert nothing_left(cluster, bookie)


def test_an_address_where_an_interface_is_named_is_refused_with_the_fix(harness, cluster, tmp_path):
    """What bkctl's sandbox wrote before listeningInterface meant an interface: refused, as a Java bookie refuses
    it ("No such interface 127.0.0.1"), naming the keys that keep the bookie's id and address."""
    bookie = LocalBookie.create(
        1, tmp_path / "bookie-1", harness.service_uri, {"listeningInterface": "127.0.0.1", "advertisedAddress": ""}
    )
    result = run_bookie(bookie.conf_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: listeningInterface=127.0.0.1 is an address, but listeningInterface names a network interface, "
        f"as in BookKeeper: to listen on 127.0.0.1 and be bookie 127.0.0.1:{bookie.port}, set "
        "listeningInterface=lo and advertisedAddress=127.0.0.1"
    ]
    assert nothing_left(cluster, bookie)


def test_a_loopback_bookie_address_is_refused_without_allow_loopback(harness, cluster, tmp_path):
    bookie = LocalBookie.create(
        1, tmp_path / "bookie-1", harness.service_uri, {**FROM_LO, "allowLoopback": "false", "bookieId": "bookie-1"}
    )
    result = run_bookie(bookie.conf_path)
    assert result.returncode == 2  # with bookieId too: BookKeeper's bookie server computes the address all the same
    assert result.stderr.splitlines() == [
        f"error: bookie address 127.0.0.1:{bookie.port} is a loopback address, which BookKeeper refuses unless "
        "allowLoopback=true: set listeningInterface (e.g. eth0) or advertisedAddress to an address that clients "
        "and other bookies reach, or allowLoopback=true"
    ]
    assert nothing_left(cluster, bookie)


def test_use_host_name_as_bookie_id_names_the_bookie_by_its_host_name(harness, cluster, tmp_path):
    bookie = LocalBookie.create(
        1, tmp_path / "bookie-1", harness.service_uri, {**FROM_LO, "useHostNameAsBookieID": "true"}
    )
    harness.bookies.append(bookie)
    bookie.pid = spawn(
        [sys.executable, "-m", "bkctl", "bookie", "run", "--conf", str(bookie.conf_path)], bookie.log_path
    )
    host = socket.gethostbyaddr("127.0.0.1")[0]  # the canonical name of the interface's address
    assert host != "127.0.0.1"
    bookie_id = registered_id(cluster, bookie.pid)
    assert bookie_id == f"{host}:{bookie.port}"
    assert CookieStore(cluster).list() == [bookie_id]
    assert BookieRegistry(cluster).get(bookie_id).info.bookie_endpoint().host == host
