"""How a sandbox's state is shown, shared by start and status."""


def show(app, doc: dict) -> None:
    pid = doc["zookeeper"]["pid"]
    zookeeper = "not running" if pid is None else f"pid {pid}"

    def table():
        app.terminal.fields(
            [
                ("Service URI", doc["serviceUri"]),
                ("State dir", doc["stateDir"]),
                ("ZooKeeper", f"{doc['zookeeper']['address']} ({zookeeper})"),
                *([("Security", f"TLS and roles, CA in {doc['stateDir']}/tls")] if doc.get("secure") else []),
            ]
        )
        if doc["bookies"]:
            app.terminal.table(
                ["BOOKIE", "STATE", "PID", "METRICS"],
                [[b["bookieId"], b["state"], b["pid"], b["metricsPort"]] for b in doc["bookies"]],
            )

    app.terminal.document(doc, table)
