from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from bkctl.options import output_option
from bkctl.pulsar.common import parse_duration, pulsar_zk_option

if TYPE_CHECKING:
    from bkctl.app import Application


@click.command()
@pulsar_zk_option
@click.option(
    "--min-age",
    default="1h",
    show_default=True,
    callback=parse_duration,
    metavar="DURATION",
    help="Report a ledger IN_RECOVERY only this long after it entered it (a broker may be recovering it): 90s, 30m, "
    "1h, 2d.",
)
@click.option(
    "--verify-entries",
    type=click.FloatRange(0, 100),
    default=0,
    metavar="PERCENT",
    help="Also read this share of the entries from every replica, as `cluster check` does (slow).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1),
    default=8,
    show_default=True,
    help="Requests to bookies in flight (each asks about up to 1000 ledgers).",
)
@click.option(
    "--recheck-delay",
    type=click.FloatRange(0),
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="Ask a bookie that did not answer again after this long.",
)
@output_option
@click.pass_obj
def missing(
    app: Application,
    pulsar_zk: str | None,
    min_age: float,
    verify_entries: float,
    concurrency: int,
    recheck_delay: float,
) -> None:
    """List the ledgers Pulsar's metadata references that BookKeeper lost, per topic.

    Every ledger a managed ledger lists, a cursor names, a schema locator indexes or a compaction cursor names is
    checked: no-metadata (its ledger metadata is gone), no-data (no bookie holds some of its entries: which ones,
    from the bookies' indexes as `cluster check` asks them, every entry of every final segment), closed-head (a
    topic's current ledger, empty, CLOSED by a recovery or an ensemble change, or IN_RECOVERY longer than --min-age:
    a broker still writing to it loses what it acknowledges, apache/pulsar#26074; harmless if no broker serves the
    topic, docs/pulsar.md says how to tell), in-recovery (IN_RECOVERY longer than --min-age, since its metadata last
    changed). Each finding says what a broker will fail on. A finding is checked twice, Pulsar's metadata re-read in
    between. Offloaded ledgers are not checked. A bookie that does not answer the listing (Java bookies with
    DbLedgerStorage, Pulsar's default, never do) is read instead: the first and last entry of its share of each final
    segment, as BookKeeper's ledger checker reads them. Exit 3 when anything is missing; 1 when nothing is but some
    ledger could not be checked: a bookie did not answer, or is not registered but keeps its cookie (stopped,
    restarting: its copies are unknown, not lost).
    """
    from admin.check.checker import Checker, CheckOptions
    from admin.pulsar.missing import MissingLedgers, role
    from bkctl.errors import ExitCode
    from bkctl.pulsar.common import open_audit

    audit = open_audit(app, pulsar_zk, min_age)
    options = CheckOptions(concurrency=concurrency, verify_entries=verify_entries, recheck_delay=recheck_delay)

    def holdings(ledgers: dict[int, Any]) -> Any:
        return app.client.run(Checker(app.client.core, options).holdings(ledgers, probe_ends=True))

    with app.terminal.phases() as progress:
        report = MissingLedgers(audit, holdings, min_age).run(progress=progress)
    for problem in report.problems:
        app.terminal.warn(problem)
    topics = report.topics()
    doc: dict[str, Any] = {
        "topics": [{"topic": topic, "missing": [m.doc(ref) for m, ref in found]} for topic, found in topics.items()],
        "count": len(report.missing),
        "byReason": report.by_reason(),
        "ledgers": report.ledgers,
        "offloaded": report.offloaded,
        "managedLedgers": report.pulsar.topics,
        "minAgeSeconds": min_age,
        "verifyEntriesPercent": verify_entries,
        "seconds": round(report.seconds, 2),
        "unavailableBookies": report.unavailable,
        "problems": report.problems + [f"{k}: {v}" for k, v in sorted(report.pulsar.unreadable.items())],
    }

    def text() -> None:
        if not topics:
            click.echo(f"nothing missing ({report.ledgers} referenced ledgers checked)", err=True)
            return
        for topic, found in topics.items():
            app.terminal.line(topic)
            for item, ref in found:
                lost = f", {item.lost_text()} lost" if item.lost else ""
                app.terminal.line(f"  ledger {item.ledger_id} ({role(ref)}): {item.reason}: {item.detail}{lost}")
                app.terminal.line(f"    {item.impact(ref)}")
        counts = ", ".join(f"{n} {reason}" for reason, n in report.by_reason().items() if n)
        app.terminal.line(f"{len(report.missing)} ledger(s) missing in {len(topics)} topic(s): {counts}")

    app.terminal.document(doc, text)
    if report.missing:
        raise click.exceptions.Exit(ExitCode.PROBLEMS)
    if doc["problems"]:
        raise click.exceptions.Exit(ExitCode.FAILED)
