import click

from bkctl.options import output_option


@click.command("list")
@click.option("--readonly", "which", flag_value="readonly", help="Only read-only bookies.")
@click.option("--all", "which", flag_value="all", help="Writable and read-only bookies.")
@output_option
@click.pass_obj
def list_bookies(app, which: str | None):
    """List registered bookies (writable ones unless --readonly or --all)

    -o wide adds why a read-only bookie is read-only (operator, disk-threshold, journal-failure; unknown for a
    bookie that does not publish it, as Java bookies) and its endpoints.
    """
    from bookie.meta.registration import BookieRegistry

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
    headers = ["BOOKIE", "STATE", "RACK"] + (["REASON", "ENDPOINTS"] if app.terminal.output == "wide" else [])

    def row(doc):
        endpoints = [f"{e['protocol']}://{e['host']}:{e['port']}" for e in doc["endpoints"]]
        reasons = doc["readOnlyReasons"]
        return [doc["bookieId"], doc["state"], doc["rack"], "unknown" if reasons is None else reasons, endpoints][
            : len(headers)
        ]

    app.terminal.document(
        docs, lambda: app.terminal.table(headers, [row(d) for d in docs], empty="no bookies registered")
    )
