from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from bkctl.options import dry_run_option, output_option, yes_option
from bkctl.pulsar.common import min_age_option, pulsar_zk_option

if TYPE_CHECKING:
    from bkctl.app import Application

HEADERS = ["LEDGER", "KIND", "OWNER", "AGE", "SIZE", "WHY"]


@click.command()
@pulsar_zk_option
@min_age_option
@click.option("--delete", is_flag=True, help="Delete the orphans (asks first unless --yes).")
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def orphans(app: Application, pulsar_zk: str | None, min_age: float, delete: bool, yes: bool, dry_run: bool) -> None:
    """List ledgers Pulsar created that nothing in Pulsar's metadata references any more; exit 3 when there are

    An orphan: created by Pulsar (custom metadata application=pulsar) as a topic's data or cursor ledger, a schema
    or a compacted-topic ledger; referenced by no managed ledger, cursor, schema locator or compaction cursor; at
    least --min-age old (ctime in its metadata, else its znode's); its owner's metadata readable; a compacted
    ledger neither open nor its topic's newest. --delete re-checks each one right before deleting it and skips
    any that changed or became referenced; running it twice is safe. Exit 3 while orphans remain.
    """
    from bkctl.errors import ExitCode
    from bkctl.pulsar.common import age, open_audit
    from bkctl.terminal import format_bytes

    audit = open_audit(app, pulsar_zk, min_age)
    with app.terminal.phases() as progress:
        report = audit.run(referenced_too=False, progress=progress)
    for problem in report.problems:
        app.terminal.warn(problem)
    found = report.orphans
    size = sum(v.ledger.length for v in found if v.ledger.closed)
    stored = sum(v.ledger.stored for v in found if v.ledger.closed)
    doc: dict[str, Any] = {
        "orphans": [v.doc() for v in found],
        "count": len(found),
        "bytes": size,
        "storedBytes": stored,
        "ledgers": report.ledgers,
        "managedLedgers": report.pulsar.topics,
        "minAgeSeconds": min_age,
        "seconds": round(report.seconds, 2),
        "problems": report.problems + [f"{k}: {v}" for k, v in sorted(report.pulsar.unreadable.items())],
    }
    deletions: list[Any] = []
    if (delete or dry_run) and found:
        if dry_run:
            for v in found:
                app.terminal.info(f"ledger/{v.ledger.ledger_id} would be deleted (dry run)")
        else:
            app.terminal.confirm(f"Delete {len(found)} orphaned ledger(s) ({format_bytes(size)})?", "delete", yes)
            with app.terminal.progress("deleting", total=len(found), unit="ledgers") as advance:
                for deletion in audit.delete(found):
                    deletions.append(deletion)
                    advance()
                    if app.terminal.output not in ("json", "yaml"):
                        note = f" ({deletion.reason})" if deletion.reason else ""
                        app.terminal.line(f"ledger/{deletion.ledger_id} {deletion.outcome}{note}")
            doc["deletions"] = [d.doc() for d in deletions]

    def table() -> None:
        if deletions:
            return
        rows = [
            [
                v.ledger.ledger_id,
                v.ledger.owner.kind.value,
                v.ledger.owner.describe(),
                age(v.age),
                format_bytes(v.ledger.length) if v.ledger.closed else "open",
                v.reason,
            ]
            for v in found
        ]
        app.terminal.table(HEADERS, rows, empty="no orphans")
        if found:
            verb = "would be deleted (dry run)" if dry_run else "orphaned"
            app.terminal.line(
                f"{len(found)} ledger(s) {verb}: {format_bytes(size)} ({format_bytes(stored)} on bookies)"
            )

    app.terminal.document(doc, table)
    left = [v for v in found if v.ledger.ledger_id not in {d.ledger_id for d in deletions if d.outcome != "skipped"}]
    if left:
        raise click.exceptions.Exit(ExitCode.PROBLEMS)
    if doc["problems"]:
        raise click.exceptions.Exit(ExitCode.FAILED)
