import click

from bkctl.completers import complete_known_bookie_ids
from bkctl.options import output_option


@click.command("check-impact")
@click.option(
    "--bookie",
    "bookie_ids",
    multiple=True,
    required=True,
    metavar="BOOKIE",
    shell_complete=complete_known_bookie_ids,
    help="A bookie that would go away (repeatable).",
)
@output_option
@click.pass_obj
def check_impact(app, bookie_ids):
    """Say whether losing these bookies now is safe; exit 3 when some entry would drop below AQ or be lost

    Bookies already gone from the cluster count as gone too. Ledgers that would keep AQ copies but fewer than WQ
    are listed as well.
    """
    from admin.check.impact import UNSAFE, ledger_impact
    from bkctl.errors import ExitCode
    from bookie.errors import NotFound
    from bookie.meta.cookies import CookieStore
    from bookie.meta.registration import BookieRegistry

    registered = {b.bookie_id for b in BookieRegistry(app.metadata).list(writable=True, readonly=True)}
    impacts, already_gone, named = [], set(), set()
    for ledger_id, md in app.ledgers.iter_ledgers():
        ensemble = {b for s in md.segments for b in s.bookies}
        named |= ensemble
        already_gone |= ensemble - registered
        impact = ledger_impact(ledger_id, md, set(bookie_ids) | (ensemble - registered))
        if impact is not None:
            impacts.append(impact)
    # checked on the same pass over the ledgers: "safe" about a bookie that does not exist is a typo's answer
    unknown = set(bookie_ids) - registered - named - set(CookieStore(app.metadata).list())
    if unknown:
        raise NotFound(f"no bookie {', '.join(sorted(unknown))}: not registered, no cookie, and no ledger names it")
    unsafe = [i for i in impacts if i.category in UNSAFE]
    doc = {
        "bookies": list(bookie_ids),
        "alreadyGone": sorted(already_gone),
        "safe": not unsafe,
        "ledgers": [i.doc() for i in impacts],
    }

    def table():
        verdict = "UNSAFE" if unsafe else "safe"
        app.terminal.line(
            f"{verdict}: {len(unsafe)} ledgers would drop below their ack quorum or lose an entry, "
            f"{len(impacts) - len(unsafe)} more would be under-replicated"
        )
        if impacts:
            app.terminal.table(
                ["LEDGER", "CATEGORY", "SEGMENT", "BOOKIES"],
                [[i.ledger_id, i.category, i.segment, i.lost_bookies] for i in impacts],
            )

    app.terminal.document(doc, table)
    if unsafe:
        raise click.exceptions.Exit(ExitCode.PROBLEMS)
