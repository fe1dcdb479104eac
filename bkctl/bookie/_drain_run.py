"""``bookie drain``'s steps: the other bookies' load, the plan shown, the bookies made read-only, the moves with
their progress, and the report for people and scripts."""

from __future__ import annotations

from typing import Any

import click

from bkctl.terminal import format_bytes


def load_of(app, writable, estimate: dict[str, int]) -> tuple[dict[str, int], dict[str, str]]:
    """The bytes each writable bookie holds now: its entry logs, from its storage view (what `cluster usage` reads),
    else (a Java bookie, which has none) what the metadata puts on it, closed ledgers only."""
    from admin.bookie_admin import STORAGE_USAGE_TIMEOUT, fan_out

    load, load_from = {}, {}
    views = fan_out(writable, "storage usage", lambda a: a.storage_usage(), STORAGE_USAGE_TIMEOUT, tls=app.client_tls)
    for outcome in views:
        if outcome.error is None:
            load[outcome.bookie_id] = sum(log.size for log in outcome.result.logs)
            load_from[outcome.bookie_id] = "storage"
        else:
            app.terminal.info(f"bookie/{outcome.bookie_id}: load estimated from the metadata ({outcome.error})")
            load[outcome.bookie_id] = estimate.get(outcome.bookie_id, 0)
            load_from[outcome.bookie_id] = "metadata"
    return load, load_from


def show_plan(app, plan) -> None:
    """The dry run: each replica that would move, then the totals and what each target would get."""
    doc = plan.doc()

    def text():
        app.terminal.table(
            ["LEDGER", "SEGMENT", "FROM", "BYTES", "TO"],
            [[m.ledger_id, m.first_entry_id, m.source, format_bytes(m.bytes), m.target] for m in plan.moves],
            empty=f"no closed ledger names {', '.join(plan.sources)}",
        )
        for ledger_id, bookies in sorted(plan.open.items()):
            app.terminal.line(f"ledger/{ledger_id} open on {', '.join(bookies)}: moves once its writer moves off")
        app.terminal.line(
            f"total: {len(plan.moves)} replicas of {plan.ledgers} ledgers, {format_bytes(plan.bytes)}"
            + "".join(f"; {b} +{format_bytes(n)}" for b, n in sorted(plan.by_target().items()))
            + " (dry run)"
        )

    app.terminal.document(doc, text)


def make_read_only(app, bookies) -> list[dict[str, Any]]:
    """Each bookie read-only, through its admin service (ours, or BookKeeper's HTTP API); one that publishes none
    is said in a warning and left writable. Any other failure stops the drain before it moves anything."""
    from admin.bookie_admin import fan_out
    from bkctl.bookie._targets import over_http_if_asked
    from bookie.errors import AdminServiceMissing

    outcomes = fan_out(
        over_http_if_asked(bookies), "read-only mode", lambda admin: admin.set_read_only(True), tls=app.client_tls
    )
    states: list[dict[str, Any]] = []
    for outcome in outcomes:
        if outcome.error is None:
            states.append({"bookieId": outcome.bookie_id, "readOnly": True, "why": None})
        elif isinstance(outcome.error, AdminServiceMissing):
            app.terminal.warn(
                f"bookie/{outcome.bookie_id} cannot be made read-only ({outcome.error}): only its closed ledgers "
                "move, and its open ledgers' new entries (and new ledgers) may still go to it"
            )
            states.append({"bookieId": outcome.bookie_id, "readOnly": False, "why": str(outcome.error)})
        else:
            for state in states:
                if state["readOnly"]:
                    app.terminal.note(f"bookie/{state['bookieId']} left read-only: {undo(state['bookieId'])}")
            raise outcome.error
    return states


def undo(bookie_id: str) -> str:
    return f"`bkctl bookie readonly {bookie_id} --off` makes it writable again"


def run_drain(app, bookies, plan, rate: float | None, wait: float) -> None:
    """The drain under the cluster's movement lock, with progress on a terminal; the report; the exit code."""
    from admin.drain import DrainReport, drain, still_named, summary
    from bkctl.errors import ExitCode
    from bkctl.move_progress import move_progress
    from bookie.client.move import MovementLock, ReplicaMover
    from bookie.daemon import interruption

    sources = {b.bookie_id for b in bookies}
    report = DrainReport()
    done = {"moves": 0, "bytes": 0}  # what the bar counted, for an interruption's message
    with MovementLock(app.metadata, f"bkctl bookie drain {' '.join(sorted(sources))}", app.terminal.note):
        states = make_read_only(app, bookies)
        mover = None
        try:
            with move_progress(app, "moving", len(plan.moves), plan.bytes, unit="replicas") as (progress, done):
                mover = ReplicaMover(app.client.core, rate * 1e6 if rate else None, progress)
                writers_move = any(s["readOnly"] for s in states)
                app.client.run(drain(mover, sources, plan.load, wait, report, writers_move))
        except KeyboardInterrupt as exc:
            kept = ""
            if mover is not None:
                mover.settled.wait(10)  # the copies in flight keep what their targets acknowledged
                kept = "".join(
                    f", ledger {lid} copied up to entry {stop - 1}"
                    for lid, stop in sorted(mover.report.kept_until.items())
                )
            left = max(0, len(plan.moves) - done["moves"])
            read_only = [s["bookieId"] for s in states if s["readOnly"]]
            raise type(exc)(
                f"{interruption(exc)} ({done['moves']} replicas moved, {format_bytes(done['bytes'])} copied{kept}; "
                f"about {left} left: run it again to go on"
                + (f"; {', '.join(read_only)} left read-only)" if read_only else ")")
            ) from None
    doc = summary(states, report, *still_named(app.metadata, sources))
    app.terminal.document(doc, lambda: show_report(app, doc))
    if report.failed:
        raise click.exceptions.Exit(ExitCode.FAILED)
    if not doc["complete"]:
        raise click.exceptions.Exit(ExitCode.PROBLEMS)


def show_report(app, doc: dict[str, Any]) -> None:
    app.terminal.fields(
        [
            (
                "Moved",
                f"{len(doc['moved'])} replicas of {doc['ledgersMoved']} ledgers, {doc['entries']} entries, "
                f"{format_bytes(doc['bytes'])} in {doc['seconds']:.1f} s ({doc['mbPerSec']} MB/s)",
            ),
            ("Open", len(doc["open"])),
            ("Failed", len(doc["failed"])),
        ]
    )
    for ledger in doc["open"]:
        app.terminal.line(f"ledger/{ledger['ledgerId']} open on {', '.join(ledger['bookies'])}: {ledger['finish']}")
    for ledger_id in doc["left"]:
        app.terminal.line(f"ledger/{ledger_id} still names it (written or changed meanwhile): run the drain again")
    for ledger_id in doc["busy"]:
        app.terminal.line(f"ledger/{ledger_id} busy: another process re-replicates it; run the drain again later")
    for ledger_id, reason in doc["failed"].items():
        app.terminal.line(f"ledger/{ledger_id} FAILED: {reason}")
    for state in doc["bookies"]:
        if state["readOnly"]:
            app.terminal.line(f"bookie/{state['bookieId']} left read-only: {undo(state['bookieId'])}")
        else:
            app.terminal.line(f"bookie/{state['bookieId']} not read-only: {state['why']}")
    if doc["complete"]:
        app.terminal.line(f"no ledger names {', '.join(s['bookieId'] for s in doc['bookies'])}")
        app.terminal.line("next steps:")
        for step in doc["nextSteps"]:
            app.terminal.line(f"  {step}")
