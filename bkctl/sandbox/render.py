"""How a sandbox's state is shown, shared by start and status."""


def show(app, state) -> None:
    doc = state.to_status()

    def table():
        app.terminal.fields(
            [
                ("Service URI", doc["serviceUri"]),
                ("State dir", doc["stateDir"]),
                ("ZooKeeper", f"{doc['zookeeper']['address']} (pid {doc['zookeeper']['pid']})"),
                ("Bookies", len(doc["bookies"])),
            ]
        )

    app.terminal.document(doc, table)
