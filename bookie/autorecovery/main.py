"""Autorecovery as a process: ``python -m bookie.autorecovery --conf FILE``, what the sandbox starts beside its
bookies. ``bkctl autorecovery run`` runs the same :func:`run_autorecovery` on the client of its cluster.
"""

from __future__ import annotations

import asyncio
import signal
from typing import TYPE_CHECKING

from bookie import daemon
from bookie.server.config import BookieConfig

if TYPE_CHECKING:
    from bookie.client import BookKeeper

# What names the process in the auditor election: the keys of a bookie's id (bookie/server/network.py)
ID_KEYS = (
    "bookieId",
    "advertisedAddress",
    "listeningInterface",
    "useHostNameAsBookieID",
    "useShortHostName",
    "bookiePort",
)


def auditor_id(properties: dict[str, str]) -> str:
    """AutoRecoveryMain's BookieImpl.getBookieId(conf): the id that a bookie with these settings has, so that run
    beside a bookie, with its bk_server.conf, autorecovery is named after that bookie. A loopback address is
    allowed: this process listens on nothing, and the id only names it (BookKeeper's refusal would stop autorecovery
    on a host named 127.0.x.x)."""
    from bookie.server.network import BookieNetwork

    config = BookieConfig.load(overrides={k: v for k, v in properties.items() if k in ID_KEYS})
    config.allowLoopback = True
    return BookieNetwork.of(config).bookie_id


def run_autorecovery(client: BookKeeper, name: str, poll: float = 1.0, open_grace: float = 30.0) -> None:
    """Audit and re-replicate as ``name`` until SIGTERM or SIGINT (see :mod:`bookie.autorecovery.recovery`)."""
    from bookie.autorecovery.recovery import AutoRecovery

    stop = asyncio.Event()

    def request_stop(*_: object) -> None:
        client.loop.call_soon_threadsafe(stop.set)

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    client.run(AutoRecovery(client.core, name, poll=poll, open_grace=open_grace).run(stop))


def main(argv: list[str] | None = None) -> None:
    parser = daemon.parser(
        "python -m bookie.autorecovery",
        "Run autorecovery in the foreground: auditor election, marking lost bookies' ledgers, re-replication; "
        "SIGTERM or Ctrl-C stops it. Operators: `bkctl autorecovery run`.",
    )
    parser.add_argument(
        "--conf",
        metavar="FILE",
        help="a bk_server.conf: the cluster (metadataServiceUri), the ZooKeeper login and session timeout, and the "
        "bookie id this process is named by [default: BookKeeper's defaults]",
    )
    parser.add_argument("--service-uri", metavar="URI", help="the metadata service [default: the configuration's]")
    args = daemon.parse(parser, argv)

    def start() -> None:
        from bookie.client import BookKeeper
        from bookie.client.config import ClientConfig
        from bookie.logs import configure_server
        from bookie.meta.store import MetadataStore
        from bookie.meta.uri import parse_service_uri

        config = BookieConfig.load(args.conf, {"metadataServiceUri": args.service_uri} if args.service_uri else {})
        configure_server(args.log_format)
        timeout = config.zkTimeout / 1000
        with MetadataStore(parse_service_uri(config.metadataServiceUri), timeout, timeout, config.zk_security) as store:
            client = BookKeeper(store=store, config=ClientConfig(tls=config.client_tls()))
            try:
                run_autorecovery(client, auditor_id(config.properties))
            finally:
                client.close()

    daemon.run(start)
