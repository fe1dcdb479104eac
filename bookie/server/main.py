"""The bookie process: ``python -m bookie.server --conf FILE``, what the local harness and the sandbox start.

``bkctl bookie run`` runs a bookie through the same :func:`run_bookie`, with its flags on top of the file.
"""

from __future__ import annotations

import logging

from bookie import daemon
from bookie.errors import BKError
from bookie.server.config import BookieConfig


def run_bookie(config: BookieConfig) -> None:
    """Run the bookie ``config`` describes, in the foreground until SIGTERM or SIGINT, then shut it down cleanly.

    Raises :class:`InvalidArgument` for a setting it cannot honour (an unknown interface, a loopback address without
    allowLoopback) before anything is claimed or written, and :class:`BKError` when it refuses to start (directories
    or cookie that do not match its cluster, directories another bookie holds, ports taken, a corrupt journal)."""
    from bookie.server.bookie import run
    from bookie.server.claim import StartRefused
    from bookie.server.network import BookieNetwork

    soft = daemon.raise_open_file_limit()
    budget = daemon.index_file_budget()
    if "openFileLimit" in config.properties and config.openFileLimit > budget:
        logging.getLogger("bookie.server").warning(
            "openFileLimit %d: this process may open %d files, so at most %d index files are kept open",
            config.openFileLimit,
            soft,
            budget,
        )
    for key in config.unused_keys:  # a Java bookie's bk_server.conf: say what it sets that this bookie ignores
        logging.getLogger("bookie.server.config").warning("%s is not used by this bookie: ignored", key)
    network = BookieNetwork.of(config)
    try:
        run(config, network)
    except (OSError, StartRefused) as exc:
        raise BKError(f"bookie {network.bookie_id} cannot start: {exc}") from None


def main(argv: list[str] | None = None) -> None:
    parser = daemon.parser(
        "python -m bookie.server",
        "Run a bookie in the foreground; SIGTERM or Ctrl-C shuts it down cleanly. Operators: `bkctl bookie run`.",
    )
    parser.add_argument("--conf", required=True, metavar="FILE", help="the bookie's bk_server.conf")
    args = daemon.parse(parser, argv)

    def start() -> None:
        from bookie.logs import configure_server

        config = BookieConfig.load(args.conf)
        configure_server(args.log_format)
        run_bookie(config)

    daemon.run(start)
