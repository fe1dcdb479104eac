import click

from bkctl.bookie._offline import directory_options
from bkctl.options import dry_run_option, output_option, password_options


@click.command("rebuild-index")
@click.argument("ledger_ids", metavar="LEDGER...", nargs=-1, required=True, type=click.IntRange(0))
@password_options
@click.option("--b64-password", help="The password in base64, for one that is not UTF-8.")
@directory_options
@dry_run_option
@output_option
@click.pass_obj
def rebuild_index(
    app, ledger_ids, password, password_file, b64_password, journal_dirs, ledger_dirs, index_dirs, dry_run
):
    """Rebuild ledgers' index files from a stopped bookie's entry logs (regenerate-interleaved-storage-index-file)

    Scans every entry log and points each entry of the ledgers named at its last copy. A ledger without an index
    file gets one, fenced, with the master key of the password (the ledger's, as in its metadata); an existing one
    keeps its header. Refused while a bookie of ours runs on the directories (exit 3), and on a DbLedgerStorage
    bookie's, which have no index files (exit 2: rebuild-db-index rebuilds theirs); --dry-run scans and writes
    nothing.
    """
    import base64
    import binascii

    from admin.offline.consistency import is_db_storage
    from admin.offline.rebuild import rebuild_index as rebuild
    from bkctl.bookie._offline import bookie_config, require_ledger_dirs, stopped
    from bkctl.options import read_password
    from bookie.codec.digest import master_key
    from bookie.errors import InvalidArgument

    if b64_password is not None:
        if password is not None or password_file is not None:
            raise InvalidArgument("give one of --password, --password-file and --b64-password")
        try:
            secret = base64.b64decode(b64_password, validate=True)
        except binascii.Error:
            raise InvalidArgument("--b64-password is not base64") from None
    elif password is None and password_file is None:
        raise InvalidArgument("give the ledgers' password: --password (--password '' for none) or --password-file")
    else:
        secret = read_password(password, password_file)
    config = bookie_config(app, journal_dirs, ledger_dirs, index_dirs)
    require_ledger_dirs(config)
    if is_db_storage(config.storage()):
        raise InvalidArgument(
            "a DbLedgerStorage bookie has no index files to rebuild: use bkctl bookie rebuild-db-index locations"
        )
    with stopped(config, "rebuild its index"), app.terminal.phases() as progress:
        rebuilt = rebuild(config.storage(), set(ledger_ids), master_key(secret), dry_run, progress)
    docs = [{**r.doc(), "dryRun": dry_run} for r in rebuilt]
    rows = [
        [d["ledgerId"], d["entries"], d["firstEntry"], d["lastEntry"], "new" if d["newIndexFile"] else "existing"]
        for d in docs
    ]
    app.terminal.document(docs, lambda: app.terminal.table(["LEDGER", "ENTRIES", "FIRST", "LAST", "INDEX"], rows))
    for d in docs:
        if not d["entries"]:
            app.terminal.warn(f"ledger {d['ledgerId']}: no entries in the entry logs; its index is left as it was")
    if dry_run:
        app.terminal.info("dry run: no index file written")
