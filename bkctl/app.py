"""The application object every command gets as ``ctx.obj``: options, configuration, output, and the
connections a command opens (closed when the command ends)."""

from __future__ import annotations

from functools import cached_property

import click

from bkctl.terminal import Terminal
from bookie.errors import ServiceUnavailable


class Application:
    def __init__(self, ctx: click.Context, service_uri: str | None, conf: str | None, verbosity: int):
        self.ctx = ctx
        self.service_uri_flag = service_uri  # from -u or BKCTL_SERVICE_URI (click applies that precedence)
        self.conf_path = conf
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

        text = self.service_uri_flag or metadata_service_uri(self.config)
        if not text:
            from bookie.local.sandbox import Sandbox

            sandbox = Sandbox()
            state = sandbox.running()
            if state is None:
                raise ServiceUnavailable(
                    "no metadata service given and no sandbox running in "
                    f"{sandbox.dir}: pass -u/--service-uri, set BKCTL_SERVICE_URI, or run `bkctl sandbox start`"
                )
            text = state.service_uri
        uri = parse_service_uri(text)
        self.terminal.info(f"metadata service: {uri}")
        return uri

    @cached_property
    def metadata(self):
        """A ZooKeeper session for this command, closed when it ends."""
        from bookie.meta.store import MetadataStore

        store = MetadataStore(self.service_uri)
        self.ctx.call_on_close(store.close)
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
