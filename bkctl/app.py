"""The application object every command gets as ``ctx.obj``: options, configuration, output, and the
connections a command opens (closed when the command ends)."""

from __future__ import annotations

from functools import cached_property

import click

from bkctl.terminal import Terminal
from bookie.errors import InvalidArgument, ServiceUnavailable


class Application:
    def __init__(self, ctx: click.Context, service_uri: str | None, conf: str | None, verbosity: int,
                 timeout: float | None = None, log_format: str = "text"):
        self.ctx = ctx
        self.log_format = log_format  # --log-format / BKCTL_LOG_FORMAT (bkctl.logs)
        self.service_uri_flag = service_uri  # from -u or BKCTL_SERVICE_URI (click applies that precedence)
        self.conf_path = conf
        self.timeout_flag = timeout  # from --timeout or BKCTL_TIMEOUT
        self.terminal = Terminal(verbosity)

    @cached_property
    def config(self) -> dict[str, str]:
        from bookie.conf import load_properties

        return load_properties(self.conf_path) if self.conf_path else {}

    @cached_property
    def service_uri(self):
        """The metadata service URI: -u / BKCTL_SERVICE_URI, else -c / BKCTL_CONF, else the running sandbox."""
        from bookie.conf import metadata_service_uri
        from bookie.meta.uri import parse_service_uri

        text, source = self.service_uri_flag, "-u/BKCTL_SERVICE_URI"
        if not text and self.conf_path:
            text, source = metadata_service_uri(self.config, self.conf_path), self.conf_path
            if not text:
                # a configuration file is named to pick a cluster: falling back to the sandbox would act on
                # another cluster than the one the operator meant
                raise InvalidArgument(
                    f"configuration file {self.conf_path} names no metadata service "
                    "(metadataServiceUri, or zkServers): add one, or pass -u/--service-uri"
                )
        if not text:
            from bookie.local.sandbox import Sandbox

            sandbox = Sandbox()
            state = sandbox.running()
            if state is None:
                raise ServiceUnavailable(
                    "no metadata service given and no sandbox running in "
                    f"{sandbox.dir}: pass -u/--service-uri, set BKCTL_SERVICE_URI, or run `bkctl sandbox start`"
                )
            text, source = state.service_uri, f"the sandbox in {sandbox.dir}"
        uri = parse_service_uri(text)
        self.terminal.info(f"metadata service: {uri} (from {source})")
        return uri

    @cached_property
    def timeout(self) -> float:
        """Seconds to wait for ZooKeeper: --timeout / BKCTL_TIMEOUT, else zkTimeout of -c, else 8 s."""
        from bookie.meta.store import CONNECT_TIMEOUT

        if self.timeout_flag is not None:
            return self.timeout_flag
        return self.zk_timeout or CONNECT_TIMEOUT

    @cached_property
    def zk_timeout(self) -> float | None:
        """zkTimeout of -c in seconds (BookKeeper's session timeout, in ms there), or None."""
        text = self.config.get("zkTimeout")
        if not text:
            return None
        try:
            millis = int(text)
        except ValueError:
            millis = 0
        if not 0 < millis <= 86_400_000:  # up to a day, as --timeout
            raise InvalidArgument(f"configuration file {self.conf_path}: zkTimeout={text!r} is not a positive "
                                  "number of milliseconds (up to a day)")
        return millis / 1000

    @cached_property
    def session(self):
        """A ZooKeeper session for this command, closed when it ends; the root may hold no cluster (yet)."""
        from bookie.meta.store import SESSION_TIMEOUT, MetadataStore

        store = MetadataStore(self.service_uri, connect_timeout=self.timeout,
                              session_timeout=self.zk_timeout or SESSION_TIMEOUT)
        self.ctx.call_on_close(store.close)
        return store

    @cached_property
    def metadata(self):
        """The session, once it is known that its root holds a cluster.

        Checked here, once per command, so that no verb mistakes a typo in the root for an empty cluster
        ("no ledgers", "no bookies", exit 0): one read of LAYOUT, which the ledger manager needs anyway.
        """
        from bookie.meta.layout import read_layout

        store = self.session
        read_layout(store)
        return store

    @cached_property
    def ledgers(self):
        from bookie.meta.ledger_manager import LedgerManager

        return LedgerManager(self.metadata)

    @cached_property
    def client(self):
        """A BookKeeper client on this command's ZooKeeper session, closed when the command ends."""
        from bookie.client import BookKeeper

        client = BookKeeper(store=self.metadata)
        self.ctx.call_on_close(client.close)
        return client
