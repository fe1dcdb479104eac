"""What the pulsar verbs share: where Pulsar's metadata is (--pulsar-zk), --min-age, and how a verdict is shown."""

from __future__ import annotations

import re
from typing import Any

import click

from bkctl.terminal import format_bytes

DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
HEADERS = ["LEDGER", "STATUS", "KIND", "OWNER", "AGE", "SIZE"]
WIDE = ["REFERENCED-BY", "AGE-FROM", "REASON"]


def parse_duration(_ctx: click.Context | None, param: click.Parameter | None, value: str) -> float:
    """``90s``, ``30m``, ``1h``, ``2d`` or plain seconds."""
    match = DURATION.match(value)
    if match is None:
        raise click.BadParameter(f"{value!r} is not a duration such as 90s, 30m, 1h or 2d", param=param)
    return float(match.group(1)) * UNITS[match.group(2)]


def pulsar_zk_option(command: Any) -> Any:
    return click.option(
        "--pulsar-zk",
        metavar="HOST:PORT[/CHROOT]",
        help="Where Pulsar's metadata is (its metadataStoreUrl) [default: the bookies' ZooKeeper, at the parent "
        "of the ledgers root: /ledgers -> /].",
    )(command)


def min_age_option(command: Any) -> Any:
    return click.option(
        "--min-age",
        default="1h",
        show_default=True,
        callback=parse_duration,
        metavar="DURATION",
        help="Never call a younger ledger orphaned (a broker may be creating it): 90s, 30m, 1h, 2d.",
    )(command)


def open_audit(app: Any, pulsar_zk: str | None, min_age: float, read_cursors: bool = True) -> Any:
    """A PulsarAudit of the command's cluster; sessions it opens close when the command ends."""
    from admin.pulsar.orphans import PulsarAudit, cursor_position_reader
    from bookie.meta.tree import ZooKeeperTree

    store = app.metadata
    ledgers = ZooKeeperTree(store, store.root)
    pulsar, same = pulsar_tree(app, pulsar_zk)
    reader = cursor_position_reader(lambda: app.client) if read_cursors else None
    return PulsarAudit(ledgers, app.ledgers.manager, pulsar, min_age, reader, same_zookeeper=same)


def pulsar_tree(app: Any, pulsar_zk: str | None) -> tuple[Any, bool]:
    """Pulsar's metadata tree as --pulsar-zk names it, and whether it is in the bookies' ZooKeeper (then read on
    the command's session; else on a session of its own, closed when the command ends)."""
    from bookie.meta.tree import ZooKeeperAddress, ZooKeeperTree, parse_zk_address

    store = app.metadata
    if pulsar_zk is None:
        hosts, root = store.uri.hosts, store.root.rsplit("/", 1)[0]
    else:
        address = parse_zk_address(pulsar_zk, "--pulsar-zk")
        hosts, root = address.hosts, address.root
    same = set(hosts) == set(store.uri.hosts)
    if same:
        pulsar = ZooKeeperTree(store, root)
    else:
        pulsar = ZooKeeperTree.connect(ZooKeeperAddress(hosts, root), app.timeout)
        app.ctx.call_on_close(pulsar.close)
    app.terminal.info(f"Pulsar's metadata: {','.join(f'{h}:{p}' for h, p in hosts)}{root or '/'}")
    return pulsar, same


def age(seconds: float) -> str:
    """``45s``, ``12m``, ``3h05m``, ``4d02h``."""
    s = int(max(seconds, 0))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def verdict_row(verdict: Any, wide: bool) -> list[Any]:
    ledger, owner = verdict.ledger, verdict.ledger.owner
    size = format_bytes(ledger.length) if ledger.closed else "open"
    row = [
        ledger.ledger_id,
        verdict.status,
        owner.kind.value if owner else None,
        owner.describe() if owner else None,
        age(verdict.age),
        size,
    ]
    if wide:
        row += [[r.describe() for r in verdict.references], ledger.age_source, verdict.reason]
    return row
