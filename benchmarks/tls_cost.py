"""The cost of TLS: ``bkctl bench write`` and ``bench read`` on a plaintext sandbox and on a secure one
(``bkctl sandbox start --secure``), in one run, alternating (plain, secure, plain, secure).

Each round is a new sandbox of 3 bookies in a temporary directory; in it, for each client protocol:

- ``v3``: BookKeeper's protocol, protobuf (what a Java client speaks by default);
- ``v2``: BookKeeper's binary protocol for adds and reads (a Java client's ``useV2WireProtocol``).

``bench write --entries N`` (E3 W2 A2, 1 KiB entries), then ``bench read --entries N`` (it writes a ledger, untimed,
then reads it sequentially). The secure rounds check that TLS was used: bkctl says so (``-v``: "TLS to the bookies
(from the secure sandbox)") for every measurement, the bookies logged TLS connections authenticated by bkctl's
admin certificate, and a plaintext ``bench write`` to the same bookies (``-u``, so bkctl takes no TLS) is refused
with EUA.

    .venv/bin/python benchmarks/tls_cost.py [--entries 100000] [--rounds 2]

Prints one JSON line per measurement and a summary table with the ratio secure/plain of the means. Every sandbox is
stopped at the end of its round, also when something failed, and removed with the others at the end of the run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PROTOCOLS = {  # name -> the client's environment (bookie/client/config.py)
    "v3": {"BKCTL_USE_V2_WIRE_PROTOCOL": "false"},
    "v2": {"BKCTL_USE_V2_WIRE_PROTOCOL": "true"},
}
SAID_TLS = "TLS to the bookies (from the secure sandbox)"
TLS_LOGGED = "protected by TLS"  # bookie/server/wire/admission.py, one line per TLS connection


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bkctl", *args], env=env, capture_output=True, text=True, check=False, timeout=1800
    )


def bkctl(*args: str, env: dict[str, str]) -> tuple[dict, str]:
    """The JSON document of a command that must succeed, and its stderr."""
    done = run(*args, env=env)
    if done.returncode != 0:
        raise SystemExit(f"bkctl {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return (json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}), done.stderr


def bench(protocol: str, entries: int, env: dict[str, str]) -> dict:
    env = {**env, **PROTOCOLS[protocol]}
    result: dict = {"protocol": protocol}
    for verb in ("write", "read"):
        measured, said = bkctl("-v", "bench", verb, "--entries", str(entries), "-o", "json", env=env)
        result[f"{verb}EntriesPerSec"] = measured["entriesPerSec"]
        result[f"{verb}P50Ms"] = measured["latencyMs"]["p50"]
        result[f"{verb}P99Ms"] = measured["latencyMs"]["p99"]
        result[f"{verb}CpuSeconds"] = measured["cpuSeconds"]
        result[f"{verb}Tls"] = SAID_TLS in said
    return result


def plaintext_refused(service_uri: str, env: dict[str, str]) -> bool:
    """A client without TLS (``-u`` names the cluster, so bkctl does not take the sandbox's certificate) is refused by
    the bookies. It logs in to ZooKeeper with the sandbox's digest, so that ZooKeeper's ACLs do not refuse it first."""
    login = {"BKCTL_ZK_ENABLE_SECURITY": "true", "BKCTL_ZK_DIGEST_AUTH_FILE": f"{env['BKCTL_SANDBOX_DIR']}/zk-digest"}
    done = run("-u", service_uri, "bench", "write", "--entries", "100", env=env | login)
    return done.returncode == 4 and "unauthorized (EUA)" in done.stderr


def round_of(secure: bool, entries: int, base: Path) -> list[dict]:
    security = "secure" if secure else "plain"
    directory = tempfile.mkdtemp(prefix=f"sandbox-{security}-", dir=base)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BKCTL_TLS_", "BKCTL_DATA_", "BKCTL_USE_V2"))}
    env |= {"BKCTL_SANDBOX_DIR": directory}
    results = []
    try:
        status, _ = bkctl("sandbox", "start", *(["--secure"] if secure else []), "-o", "json", env=env)
        for protocol in PROTOCOLS:
            result = {"security": security, **bench(protocol, entries, env)}
            if result["writeTls"] != secure or result["readTls"] != secure:
                raise SystemExit(f"{security} round, {protocol}: bkctl used TLS {result['writeTls']} (-v said)")
            results.append(result)
            print(json.dumps(result), flush=True)
        if secure:
            logs = Path(directory).glob("bookie-*/bookie.log")
            connections = sum(log.read_text().count(TLS_LOGGED) for log in logs)
            refused = plaintext_refused(status["serviceUri"], env)
            print(json.dumps({"security": security, "tlsConnectionsLogged": connections, "plaintextRefused": refused}))
            if not connections or not refused:
                raise SystemExit("the secure sandbox did not show TLS in use (see the line above)")
    finally:
        stopped = run("sandbox", "stop", env=env)
        if stopped.returncode != 0:
            print(f"sandbox stop in {directory} failed: {stopped.stderr[-500:]}", file=sys.stderr)
    return results


def summary(results: list[dict]) -> None:
    # bench read's latency is the time per 4096 entries, which arrive in bursts: its p50 is near 0, its p99 the stalls
    keys = ["writeEntriesPerSec", "writeP50Ms", "writeP99Ms", "writeCpuSeconds", "readEntriesPerSec", "readP99Ms"]
    keys.append("readCpuSeconds")  # the client's CPU: steadier than the rates on a shared machine
    print(f"{'security':<9}{'protocol':<9}" + "".join(f"{k:>19}" for k in keys))
    for r in results:
        print(f"{r['security']:<9}{r['protocol']:<9}" + "".join(f"{r[k]:>19,}" for k in keys))

    def mean(security: str, protocol: str, key: str) -> float:
        return statistics.mean(r[key] for r in results if (r["security"], r["protocol"]) == (security, protocol))

    print("\nratio secure/plain of the means (entries/s below 1, latency or CPU above 1: TLS costs that much)")
    print(f"{'protocol':<9}" + "".join(f"{k:>19}" for k in keys))
    for protocol in PROTOCOLS:
        cells = "".join(f"{mean('secure', protocol, k) / mean('plain', protocol, k):>19.2f}" for k in keys)
        print(f"{protocol:<9}" + cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-tls-cost-") as base:
        for _ in range(args.rounds):
            for secure in (False, True):
                results += round_of(secure, args.entries, Path(base))
    summary(results)


if __name__ == "__main__":
    main()
