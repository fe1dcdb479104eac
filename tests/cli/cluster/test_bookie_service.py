"""bkctl bookie run --print-systemd-unit / --print-dockerfile: service definitions made from the bookie's own options.

The unit is checked by systemd-analyze where the machine has it, and always run the way systemd runs it: its
ExecStart serves, its ExecStartPost returns once /api/v1/bookie/is_ready says 200, its KillSignal stops the bookie
cleanly within TimeoutStopSec. The Dockerfile is linted by hadolint where installed, and always read instruction by
instruction (no image is built: that would need a registry)."""

import json
import os
import shlex
import shutil
import signal
import subprocess

from bookie.local.bookies import LocalBookie
from bookie.local.process import free_port
from bookie.meta.registration import BookieRegistry


def unit_keys(text: str) -> dict[str, list[str]]:
    keys: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            keys.setdefault(key, []).append(value)
    return keys


def test_the_systemd_unit_runs_the_bookie_until_ready_and_stops_it_cleanly(bkctl, harness, cluster, tmp_path):
    bookie = LocalBookie.create(1, tmp_path / "bookie-1", harness.service_uri, {"httpServerEnabled": "false"})
    http_port = free_port()
    result = bkctl(
        "bookie", "run", "--conf", str(bookie.conf_path), "--set", f"httpServerPort={http_port}", "--print-systemd-unit"
    )
    assert result.exit_code == 0, result.stderr
    path = tmp_path / "bkctl-bookie.service"
    path.write_text(result.stdout)
    if shutil.which("systemd-analyze"):
        verified = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True)
        assert (verified.returncode, verified.stderr) == (0, "")
    keys = unit_keys(result.stdout)
    assert keys["User"] == ["bookkeeper"] and keys["UMask"] == ["0077"] and keys["KillSignal"] == ["SIGTERM"]
    dirs = f"{bookie.journal_dir} {bookie.ledger_dir}"
    assert keys["ExecStartPre"] == [f"+/usr/bin/install -d -m 0700 -o bookkeeper -g bookkeeper {dirs}"]
    assert keys["ReadWritePaths"] == [dirs]
    start = shlex.split(keys["ExecStart"][0])
    assert start[-8:] == [
        "bookie",
        "run",
        "--conf",
        str(bookie.conf_path),
        "--set",
        f"httpServerPort={http_port}",
        "--set",
        "httpServerEnabled=true",
    ]

    with open(bookie.log_path, "ab") as log:
        pid = subprocess.Popen(start, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True).pid
    harness.bookies.append(bookie)
    bookie.pid = pid
    ready = subprocess.run(shlex.split(keys["ExecStartPost"][0]), timeout=int(keys["TimeoutStartSec"][0]))
    assert ready.returncode == 0
    assert BookieRegistry(cluster).get(bookie.bookie_id).info.properties["pid"] == str(pid)  # ready: registered
    os.killpg(pid, getattr(signal, keys["KillSignal"][0]))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert f"bookie {bookie.bookie_id} stopped" in bookie.log_path.read_text()


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    joined = text.replace("\\\n", " ")
    return [tuple(line.split(" ", 1)) for line in joined.splitlines() if line and not line.startswith("#")]


def test_the_dockerfile_installs_bkctl_and_runs_the_bookie_unprivileged_with_a_readiness_check(bkctl, tmp_path):
    conf = tmp_path / "bk_server.conf"
    conf.write_text(
        "metadataServiceUri=zk+hierarchical://zk1:2181/ledgers\njournalDirectories=/data/journal\n"
        "ledgerDirectories=/data/ledgers\nhttpServerPort=8081\nadvertisedAddress=bookie-0.bookies\n"
    )
    result = bkctl("bookie", "run", "--conf", str(conf), "--print-dockerfile")
    assert result.exit_code == 0, result.stderr
    (tmp_path / "Dockerfile").write_text(result.stdout)
    if shutil.which("hadolint"):
        linted = subprocess.run(["hadolint", str(tmp_path / "Dockerfile")], capture_output=True, text=True)
        assert (linted.returncode, linted.stdout) == (0, "")
    instructions = dockerfile_instructions(result.stdout)
    assert [i for i, _ in instructions] == [
        "FROM",
        "RUN",
        "RUN",
        "COPY",
        "USER",
        "ENV",
        "VOLUME",
        "EXPOSE",
        "STOPSIGNAL",
        "HEALTHCHECK",
        "ENTRYPOINT",
    ]
    docker = dict(instructions)
    from bkctl import __version__

    assert f'pip install --no-cache-dir "bkctl=={__version__}"' in instructions[1][1]
    assert instructions[1][1].startswith("apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev")
    assert "install -d -m 0700 -o 10001 -g 10001 /data/journal /data/ledgers" in instructions[2][1]
    assert docker["COPY"] == "bk_server.conf /etc/bookkeeper/bk_server.conf"
    assert docker["USER"] == "10001:10001" and docker["STOPSIGNAL"] == "SIGTERM"
    assert json.loads(docker["VOLUME"]) == ["/data/journal", "/data/ledgers"]
    assert docker["EXPOSE"].split() == ["3181", "3182", "8081", "8000"]
    probe = json.loads(docker["HEALTHCHECK"].split(" CMD ", 1)[1])
    assert probe[0:2] == ["python", "-c"] and probe[3] == "http://127.0.0.1:8081/api/v1/bookie/is_ready"
    assert json.loads(docker["ENTRYPOINT"]) == [
        "bkctl",
        "bookie",
        "run",
        "--conf",
        "/etc/bookkeeper/bk_server.conf",
        "--set",
        "httpServerEnabled=true",
    ]
    compile(probe[2], "probe", "exec")  # the check is Python


def test_print_options_exclude_each_other(bkctl):
    both = bkctl("bookie", "run", "--print-systemd-unit", "--print-dockerfile")
    assert (both.exit_code, both.stderr) == (2, "error: give --print-systemd-unit or --print-dockerfile, not both\n")
