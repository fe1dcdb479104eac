import click

from bkctl.bookie._offline import directory_options
from bkctl.options import output_option


@click.command("check-local")
@directory_options
@output_option
@click.pass_obj
def check_local(app, journal_dirs, ledger_dirs, index_dirs):
    """Check that every index entry of a stopped bookie points at that entry in its entry logs (localconsistencycheck)

    Reads every index file in the index directories and, for each entry, the head of the entry log record it points
    at: the log must exist, the record must be there, whole, with a sane size, and be that ledger's entry. On a
    DbLedgerStorage bookie, every location of its locations indexes instead, each against its own ledger
    directory's entry logs (check-db-index checks the ledgers index too). Exit 3
    with one row per inconsistency (LEDGER, ENTRY, PROBLEM: missing-log, past-end, bad-length, wrong-entry,
    cut-short) when any is found. Refused while a bookie of ours runs on the directories (exit 3).
    """
    from admin.offline.consistency import check_local as check
    from bkctl.bookie._offline import bookie_config, require_ledger_dirs, stopped
    from bkctl.errors import CheckFailed

    config = bookie_config(app, journal_dirs, ledger_dirs, index_dirs)
    require_ledger_dirs(config)
    with stopped(config, "check its files"), app.terminal.phases() as progress:
        report = check(config.storage(), progress)
    rows = [[i.ledger_id, i.entry_id, i.problem, i.detail] for i in report.inconsistencies]

    def table():
        if rows:
            app.terminal.table(["LEDGER", "ENTRY", "PROBLEM", "DETAIL"], rows)
        read = "the DbLedgerStorage locations index" if report.storage == "db" else f"{report.pages} index pages"
        app.terminal.info(f"{report.ledgers} ledgers, {read}, {report.entries} entries checked")

    app.terminal.document(report.doc(), table)
    if report.inconsistencies:
        raise CheckFailed(
            f"{len(report.inconsistencies)} of {report.entries} index entries do not point at their entry "
            f"({len({i.ledger_id for i in report.inconsistencies})} ledgers)"
        )
    if app.terminal.output not in ("json", "yaml"):
        app.terminal.line(f"ok: {report.entries} entries of {report.ledgers} ledgers point at their entries")
