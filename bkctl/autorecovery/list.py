import click

from bkctl.completers import complete_bookie_ids
from bkctl.options import dry_run_option, output_option, yes_option


@click.command("list-under-replicated")
@click.option("--count", is_flag=True, help="Only print how many ledgers are marked.")
@click.option(
    "--missing-replica",
    metavar="BOOKIE",
    shell_complete=complete_bookie_ids,
    help="Only ledgers missing a replica on this bookie.",
)
@click.option("--explain", is_flag=True, help="Say why each ledger is stuck, and what fixes it.")
@click.option("--fix", is_flag=True, help="Apply the safe fixes (implies --explain).")
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def list_under_replicated(app, count, missing_replica, explain, fix, yes, dry_run):
    """List the ledgers marked under-replicated, with their missing replicas and when they were marked

    --explain gives each one reason it is not re-replicated: deleted, lost (the entries no bookie holds),
    no-eligible-bookie (the constraint: no writable bookie, racks, read-only bookies), stale-lock (held by a ZooKeeper
    session connected nowhere), in-progress (how far), empty, disabled, no-worker, no-auditor, delayed (until when) or
    unknown (what was seen), with its bytes, when it was marked and the fix; it exits 3 while any is stuck. Racks
    are enforced as -c's enforceMinNumRacksPerWriteQuorum and minNumRacksPerWriteQuorum say (BookKeeper's default:
    not enforced). --fix applies only the safe fixes: it removes deleted ledgers' markers, releases stale locks, and
    replaces the lost bookies in the metadata of closed empty ledgers (nothing to copy); it never deletes data and
    never fences a ledger. It asks first unless --yes; --dry-run shows what it would do. -o json: one row per ledger
    (--fix: {"applied": [...], "stuck": [...], "dryRun": ...}; docs/cli.md).
    """
    from bkctl.terminal import iso_time
    from bookie.errors import InvalidArgument
    from bookie.meta.underreplication import UnderReplicationManager

    explain = explain or fix
    if dry_run and not fix:
        raise InvalidArgument("--dry-run shows what --fix would do: give --fix too")
    if count and explain:
        raise InvalidArgument("--count and --explain/--fix do not go together")
    markers = [
        m
        for m in UnderReplicationManager(app.metadata).iter_marked()
        if missing_replica is None or missing_replica in m.replicas
    ]
    if count:
        app.terminal.document({"count": len(markers)}, lambda: app.terminal.line(str(len(markers))))
        return
    docs = [
        {"ledgerId": m.ledger_id, "missingReplicas": list(m.replicas), "ctime": m.ctime, "ctimeIso": iso_time(m.ctime)}
        for m in markers
    ]
    if explain:
        _explain(app, docs, fix, yes, dry_run)
        return
    app.terminal.document(
        docs,
        lambda: app.terminal.table(
            ["LEDGER", "MISSING-REPLICAS", "MARKED"],
            [[d["ledgerId"], d["missingReplicas"], d["ctimeIso"]] for d in docs],
            empty="no under-replicated ledgers",
        ),
    )


def _explain(app, docs, fix, yes, dry_run) -> None:
    from admin.stuck import explain, planned_action
    from admin.stuck import fix as apply
    from bookie.meta.underreplication import UnderReplicationManager

    core = app.client.core
    min_racks = _enforced_racks(app.config)
    ids = [d["ledgerId"] for d in docs]
    stuck = app.client.run(explain(core, ids, min_racks=min_racks))
    rows = _rows(docs, stuck)
    if not fix:
        app.terminal.document(rows, lambda: _show(app, rows))
        _exit_if_stuck(rows)
        return
    planned = [(s, planned_action(s)) for s in stuck if planned_action(s)]
    if dry_run or not planned:
        applied = [
            {"ledgerId": s.ledger_id, "reason": s.reason, "action": a, "done": False, "error": None} for s, a in planned
        ]
        app.terminal.document(
            {"applied": applied, "stuck": rows, "dryRun": dry_run},
            lambda: _show_fixes(app, rows, applied, dry_run),
        )
        _exit_if_stuck(rows)
        return
    app.terminal.confirm(f"Apply {len(planned)} safe fixes ({_summary(s.doc() for s, _ in planned)})?", "fix", yes)
    done = [f.doc() for f in app.client.run(apply(core, [s for s, _ in planned]))]
    marked = {m.ledger_id for m in UnderReplicationManager(app.metadata).iter_marked()}
    left = [d for d in docs if d["ledgerId"] in marked]
    after = _rows(left, app.client.run(explain(core, [d["ledgerId"] for d in left], min_racks=min_racks)))
    app.terminal.document(
        {"applied": done, "stuck": after, "dryRun": False}, lambda: _show_fixes(app, after, done, False)
    )
    _exit_if_stuck(after)


def _rows(docs, stuck) -> list[dict]:
    """Each listed ledger's row with its explanation (a ledger unmarked meanwhile is left out)."""
    from bkctl.terminal import iso_time

    by_id = {s.ledger_id: s for s in stuck if s.marked_at is not None}
    return [
        {**d, **by_id[d["ledgerId"]].doc(), "markedAtIso": iso_time(by_id[d["ledgerId"]].marked_at)}
        for d in docs
        if d["ledgerId"] in by_id
    ]


def _enforced_racks(config) -> int | None:
    """minNumRacksPerWriteQuorum of -c when enforceMinNumRacksPerWriteQuorum is true there (BookKeeper's keys and
    defaults: not enforced, 2), else None."""
    from bookie.errors import InvalidArgument

    if config.get("enforceMinNumRacksPerWriteQuorum", "false").strip().lower() != "true":
        return None
    text = config.get("minNumRacksPerWriteQuorum", "2").strip()
    if not text.isdigit() or int(text) < 1:
        raise InvalidArgument(f"minNumRacksPerWriteQuorum={text!r} in the configuration is not a positive number")
    return int(text)


def _summary(rows) -> str:
    from collections import Counter

    counts = Counter(r["reason"] for r in rows)
    return ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _show(app, rows) -> None:
    from bkctl.terminal import format_bytes

    app.terminal.table(
        ["LEDGER", "REASON", "MARKED", "BYTES", "DETAIL", "FIX"],
        [[r["ledgerId"], r["reason"], r["markedAtIso"], format_bytes(r["bytes"]), r["detail"], r["fix"]] for r in rows],
        empty="no under-replicated ledgers",
    )
    if rows:
        app.terminal.line(f"{len(rows)} stuck: {_summary(rows)}")


def _show_fixes(app, rows, applied, dry_run) -> None:
    for a in applied:
        if dry_run:
            app.terminal.line(f"ledger/{a['ledgerId']} ({a['reason']}): would {a['action']} (dry run)")
        elif a["done"]:
            app.terminal.line(f"ledger/{a['ledgerId']} ({a['reason']}): done, {a['action']}")
        else:
            app.terminal.line(f"ledger/{a['ledgerId']} ({a['reason']}): not done: {a['error']}")
    if not dry_run and applied:
        app.terminal.line()
    _show(app, rows)


def _exit_if_stuck(rows) -> None:
    if rows:
        from bkctl.errors import CheckFailed

        raise CheckFailed(f"{len(rows)} under-replicated ledgers stay stuck ({_summary(rows)})")
