import click

from bkctl.options import output_option


@click.command("list")
@click.option("--readonly", "which", flag_value="readonly", help="Only read-only bookies.")
@click.option("--all", "which", flag_value="all", help="Writable, read-only and missing bookies.")
@output_option
@click.pass_obj
def list_bookies(app, which: str | None):
    """List bookies: the writable ones, the read-only ones (--readonly), or all with the missing ones (--all)

    --all adds a row per missing bookie: one that has a cookie or that a ledger's ensemble names, and is not
    registered (this reads every ledger's metadata). When it went missing is not recorded anywhere; MISSING AFTER
    (shown when a bookie is missing) is the latest time it is known to have been part of the cluster (its cookie's
    creation, or the newest ledger placed on it). JSON: a missing row has state "missing", cookieCreateTime,
    ledgers (how many name it) and lastKnownAliveTime. -o wide adds why a read-only bookie is read-only (operator,
    disk-threshold, journal-failure; unknown for a bookie that does not publish it, as Java bookies) and its
    endpoints.
    """
    from bkctl.terminal import iso_time, with_iso_times
    from bookie.meta.membership import EnsembleNames, missing_bookies
    from bookie.meta.registration import MISSING, BookieRegistry

    registered = BookieRegistry(app.metadata).list(writable=which != "readonly", readonly=which in ("readonly", "all"))
    docs = [
        {
            "bookieId": b.bookie_id,
            "state": b.state,
            "rack": b.rack,
            "readOnlyReasons": b.read_only_reasons,
            "endpoints": [
                {"id": e.id, "host": e.host, "port": e.port, "protocol": e.protocol, "extensions": list(e.extensions)}
                for e in (b.info.endpoints if b.info else ())
            ],
        }
        for b in registered
    ]
    if which == "all":
        names = EnsembleNames.of_all_ledgers(app.metadata)
        docs += [
            with_iso_times(
                {
                    "bookieId": m.bookie_id,
                    "state": MISSING,
                    "rack": None,
                    "readOnlyReasons": [],
                    "endpoints": [],
                    "cookieCreateTime": m.cookie_ctime,
                    "ledgers": m.ledgers,
                    "lastKnownAliveTime": m.last_known_alive,
                },
                "cookieCreateTime",
                "lastKnownAliveTime",
            )
            for m in missing_bookies(app.metadata, names)
        ]
    missing = any(d["state"] == MISSING for d in docs)
    wide = app.terminal.output == "wide"
    headers = (
        ["BOOKIE", "STATE", "RACK"] + (["MISSING AFTER"] if missing else []) + (["REASON", "ENDPOINTS"] if wide else [])
    )

    def row(doc):
        cells = [doc["bookieId"], doc["state"], doc["rack"]]
        cells += [iso_time(doc.get("lastKnownAliveTime"))] if missing else []
        if wide:
            reasons = doc["readOnlyReasons"]
            endpoints = [f"{e['protocol']}://{e['host']}:{e['port']}" for e in doc["endpoints"]]
            cells += ["unknown" if reasons is None else reasons, endpoints]
        return cells

    app.terminal.document(
        docs, lambda: app.terminal.table(headers, [row(d) for d in docs], empty="no bookies registered")
    )
