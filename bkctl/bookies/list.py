import click

from bkctl.options import output_option


@click.command("list")
@click.option("--readonly", "which", flag_value="readonly", help="Only read-only bookies.")
@click.option("--all", "which", flag_value="all", help="Writable and read-only bookies.")
@output_option
@click.pass_obj
def list_bookies(app, which: str | None):
    """List registered bookies (writable ones unless --readonly or --all)"""
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
    headers = ["BOOKIE", "STATE", "RACK"] + (["ENDPOINTS"] if app.terminal.output == "wide" else [])

    def row(doc):
        endpoints = [f"{e['protocol']}://{e['host']}:{e['port']}" for e in doc["endpoints"]]
        return [doc["bookieId"], doc["state"], doc["rack"], endpoints][: len(headers)]

    app.terminal.document(
        docs, lambda: app.terminal.table(headers, [row(d) for d in docs], empty="no bookies registered")
    )
