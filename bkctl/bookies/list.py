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
    ledgers (how many name it) and lastKnownAliveTime.
    """
    from bkctl.terminal import iso_time, with_iso_times
    from bookie.meta.membership import EnsembleNames, missing_bookies
    from bookie.meta.registration import BookieRegistry

    registered = BookieRegistry(app.metadata).list(writable=which != "readonly", readonly=which in ("readonly", "all"))
    docs = [
        {
            "bookieId": b.bookie_id,
            "state": b.state,
            "rack": b.rack,
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
                    "state": "missing",
                    "rack": None,
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
    missing = any(d["state"] == "missing" for d in docs)
    headers = ["BOOKIE", "STATE", "RACK"] + (["MISSING AFTER"] if missing else [])
    headers += ["ENDPOINTS"] if app.terminal.output == "wide" else []

    def row(doc):
        endpoints = [f"{e['protocol']}://{e['host']}:{e['port']}" for e in doc["endpoints"]]
        cells = [doc["bookieId"], doc["state"], doc["rack"]]
        cells += [iso_time(doc.get("lastKnownAliveTime"))] if missing else []
        return cells + [endpoints][: len(headers) - len(cells)]

    app.terminal.document(
        docs, lambda: app.terminal.table(headers, [row(d) for d in docs], empty="no bookies registered")
    )
