"""Network partitions: one bookie cut off from every client and every other bookie.

Every packet to or from the bookie's port on the loopback interface is dropped (no RST: a client sees silence and
has only its timeouts, as with a real partition). The bookie's ZooKeeper session is left alone, so it stays
registered: the case where ZooKeeper says a bookie is alive that no client can reach, the hardest for placement and
recovery.

Why firewall rules on ``lo`` and not a network namespace: the bookies and ZooKeeper listen on 127.0.0.1 only (the
project's rule for local servers), and a process moved into a namespace of its own has a loopback of its own, so it
could no more reach ZooKeeper, and the bookie id it registered (127.0.0.1:port) would no longer name it. Rules
need root and iptables (``tests/bootstrap.sh`` installs it when it may); without them partition faults are skipped
and the suite says why.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess


class Partitioner:
    def __init__(self):
        self.tag = f"bkctl-faults-{os.getpid()}"  # every rule of ours carries it, so we remove only our own
        self.cut_ports: set[int] = set()
        self.available, self.reason = self._probe()
        if self.available:
            self._remove_stale()

    def _remove_stale(self) -> None:
        """Rules left by a run that was killed before it could heal (its pid is gone) would keep cutting a port
        that a later server may be given: remove them."""
        from bookie.local.process import pid_alive

        listing = subprocess.run(["iptables", "-w", "-S", "INPUT"], capture_output=True, text=True).stdout
        for line in listing.splitlines():
            match = re.search(r"--comment \"?bkctl-faults-(\d+)", line)
            if line.startswith("-A INPUT") and match and not pid_alive(int(match.group(1))):
                subprocess.run(["iptables", "-w", "-D", *shlex.split(line)[1:]], capture_output=True)

    def _probe(self) -> tuple[bool, str]:
        if os.geteuid() != 0:
            return False, "firewall rules need root"
        if shutil.which("iptables") is None:
            return False, "iptables is not installed (tests/bootstrap.sh installs it when run as root)"
        probe = subprocess.run(["iptables", "-w", "-L", "INPUT", "-n"], capture_output=True, text=True)
        if probe.returncode != 0:
            return False, f"iptables does not work here: {probe.stderr.strip().splitlines()[-1:]}"
        return True, ""

    def _rules(self, port: int) -> list[list[str]]:
        return [
            [
                "INPUT",
                "-i",
                "lo",
                "-p",
                "tcp",
                direction,
                str(port),
                "-m",
                "comment",
                "--comment",
                self.tag,
                "-j",
                "DROP",
            ]
            for direction in ("--dport", "--sport")
        ]

    def _iptables(self, action: str, rule: list[str]) -> None:
        subprocess.run(["iptables", "-w", action, *rule], check=True, capture_output=True)

    def cut(self, bookie) -> None:
        for rule in self._rules(bookie.port):
            self._iptables("-I", rule)
        self.cut_ports.add(bookie.port)

    def heal(self, bookie) -> None:
        if bookie.port in self.cut_ports:
            self.cut_ports.discard(bookie.port)
            for rule in self._rules(bookie.port):
                self._iptables("-D", rule)

    def heal_all(self) -> None:
        for port in list(self.cut_ports):
            self.cut_ports.discard(port)
            for rule in self._rules(port):
                subprocess.run(["iptables", "-w", "-D", *rule], capture_output=True)
