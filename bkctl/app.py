"""The application object every command gets as ``ctx.obj``: options, configuration, output, and the
connections a command opens (closed when the command ends)."""

from __future__ import annotations

import os
from dataclasses import replace
from functools import cached_property

import click

from bkctl.terminal import Terminal
from bookie.errors import InvalidArgument, ServiceUnavailable

# What may name the cluster, strongest first within each kind of source: (parameter, option, variable).
CLUSTER_SOURCES = (
    ("service_uri", "-u/--service-uri", "BKCTL_SERVICE_URI"),
    ("conf", "-c/--conf", "BKCTL_CONF"),
    ("context", "--context", "BKCTL_CONTEXT"),
)


class Application:
    def __init__(
        self,
        ctx: click.Context,
        service_uri: str | None,
        conf: str | None,
        verbosity: int,
        timeout: float | None = None,
        context: str | None = None,
        log_format: str = "text",
    ):
        self.ctx = ctx
        self.log_format = log_format  # --log-format / BKCTL_LOG_FORMAT (bookie.logs)
        self.service_uri_flag = service_uri  # from -u or BKCTL_SERVICE_URI (click applies that precedence)
        self.conf_path = conf
        self.context_name = context  # from --context or BKCTL_CONTEXT
        self.timeout_flag = timeout  # from --timeout or BKCTL_TIMEOUT
        self.terminal = Terminal(verbosity)
        self.tls_flags: dict = {}  # --tls-* / BKCTL_TLS_* (the root sets them)

    @classmethod
    def of(cls, ctx: click.Context) -> Application:
        """The application of a command line that was parsed but not run (shell completion): from the root's
        parameters, with no output."""
        root = ctx.find_root()
        params = root.params
        return cls(
            root, params.get("service_uri"), params.get("conf"), -1, params.get("timeout"), params.get("context")
        )

    def _named_by(self) -> tuple[str, str, str] | None:
        """What names the cluster: ``(parameter, value, where it came from)``, or None.

        An option on the command line beats an environment variable, as everywhere; among options (and among
        variables) a URI beats a properties file, which beats a context name. A context named neither way, the
        file's current context, comes after all of them, and the running sandbox last.
        """
        from click.core import ParameterSource

        values = {"service_uri": self.service_uri_flag, "conf": self.conf_path, "context": self.context_name}
        for source, which in ((ParameterSource.COMMANDLINE, 0), (ParameterSource.ENVIRONMENT, 1)):
            for param, option, variable in CLUSTER_SOURCES:
                value = values[param]
                if value and self.ctx.get_parameter_source(param) == source:
                    return param, value, (option, variable)[which]
        return None

    @cached_property
    def contexts(self):
        """The contexts file (``bkctl config``): empty when there is none."""
        from bkctl import contexts

        return contexts.load(warn=self.terminal.warn)

    @cached_property
    def context(self):
        """The context that names this command's cluster (``--context``/``BKCTL_CONTEXT``, else the current
        context when nothing else names one), or None."""
        named = self._named_by()
        if named is not None:
            return self.contexts.get(named[1]) if named[0] == "context" else None
        current = self.contexts.current
        return self.contexts.contexts[current] if current else None

    @cached_property
    def config(self) -> dict[str, str]:
        from bookie.conf import load_properties

        return load_properties(self.conf_path) if self.conf_path and self.context is None else {}

    @cached_property
    def service_uri(self):
        """The metadata service URI, from what names the cluster (see :meth:`_named_by`), else the current context,
        else the running sandbox."""
        from bookie.conf import metadata_service_uri
        from bookie.meta.uri import parse_service_uri

        named = self._named_by()
        if named is not None and named[0] == "service_uri":
            text, source = named[1], named[2]
        elif named is not None and named[0] == "conf":
            text, source = metadata_service_uri(self.config, self.conf_path), self.conf_path
            if not text:
                # a configuration file is named to pick a cluster: falling back to the sandbox would act on
                # another cluster than the one the operator meant
                raise InvalidArgument(
                    f"configuration file {self.conf_path} names no metadata service "
                    "(metadataServiceUri, or zkServers): add one, or pass -u/--service-uri"
                )
        elif self.context is not None:
            how = f"named by {named[2]}" if named else "the current context"
            text, source = self.context.service_uri, f"context {self.context.name} in {self.contexts.path}, {how}"
        else:
            from bookie.local.sandbox import Sandbox

            sandbox = Sandbox()
            state = sandbox.running()
            if state is None:
                raise ServiceUnavailable(
                    "no metadata service given and no sandbox running in "
                    f"{sandbox.dir}: pass -u/--service-uri, set BKCTL_SERVICE_URI, `bkctl config use-context NAME`, "
                    "or run `bkctl sandbox start` (a sandbox started with --dir D: set BKCTL_SANDBOX_DIR=D)"
                )
            text, source = state.service_uri, f"the sandbox in {sandbox.dir}"
        uri = parse_service_uri(text)
        self.terminal.info(f"metadata service: {uri} (from {source})")
        return uri

    @cached_property
    def timeout(self) -> float:
        """Seconds to wait for ZooKeeper: --timeout / BKCTL_TIMEOUT, else the timeout of the context or the zkTimeout
        of -c that named the cluster, else 8 s."""
        from bookie.meta.store import CONNECT_TIMEOUT

        if self.timeout_flag is not None:
            return self.timeout_flag
        if self.context is not None:
            return self.context.timeout or CONNECT_TIMEOUT
        return self.zk_timeout or CONNECT_TIMEOUT

    @cached_property
    def http_port(self) -> int | None:
        """The bookies' HTTP admin port of the context that names the cluster (a command's --http-port wins)."""
        return self.context.http_port if self.context is not None else None

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
            raise InvalidArgument(
                f"configuration file {self.conf_path}: zkTimeout={text!r} is not a positive "
                "number of milliseconds (up to a day)"
            )
        return millis / 1000

    @cached_property
    def zk_security(self):
        """ZooKeeper authentication and ACLs (bookie.meta.security): zkEnableSecurity, zkDigestAuthFile and
        java.security.auth.login.config of -c, else their BKCTL_ZK_* variables, else the secure sandbox's login
        when the sandbox is the cluster."""
        from bookie.meta.security import ZkSecurity

        security = ZkSecurity.from_settings(self.config, where=f" in {self.conf_path}" if self.config else "")
        if security == ZkSecurity() and self._sandbox is not None:
            return self._sandbox.zk_security() or security
        return security

    def worker_environment(self) -> dict[str, str]:
        """The BKCTL_ZK_* and BKCTL_TLS_* variables that give a process this command starts (Spark's Python workers,
        which build clients of their own) the ZooKeeper login and TLS this command uses: paths to files, never a
        secret. A client certificate in a PKCS12 store cannot be named so: refused."""
        from bookie.errors import InvalidArgument
        from bookie.meta.security import DIGEST_AUTH_FILE, ENABLE_SECURITY, ENVIRONMENT, ZkSecurity

        env: dict[str, str] = {}
        if self.zk_security != ZkSecurity():
            configured = {k: self.config[k] for k in ENVIRONMENT if self.config.get(k, "").strip()}
            inherited = any(os.environ.get(name, "").strip() for name in ENVIRONMENT.values())
            if not configured and not inherited and self._sandbox is not None:  # the secure sandbox's own login
                from bookie.local.secure import zk_digest_file

                configured = {ENABLE_SECURITY: "true", DIGEST_AUTH_FILE: str(zk_digest_file(self._sandbox.dir))}
            env |= {ENVIRONMENT[k]: v for k, v in configured.items()}
        tls = self.client_tls
        if tls is not None:
            if tls.key_store_type.upper() != "PEM" or tls.trust_store_type.upper() != "PEM":
                raise InvalidArgument(
                    "Spark's workers take TLS from BKCTL_TLS_* variables, which name PEM files: give PEM key and "
                    "trust stores (--tls-trust-store, --tls-cert, --tls-key)"
                )
            named = {
                "BKCTL_TLS_TRUST_STORE": tls.trust_store,
                "BKCTL_TLS_CERT": tls.certificate_path,
                "BKCTL_TLS_KEY": tls.key_store,
                "BKCTL_TLS_KEY_PASSWORD_FILE": tls.key_store_password_path,
                "BKCTL_TLS_HOSTNAME_VERIFICATION": "true" if tls.hostname_verification else None,
            }
            env |= {k: v for k, v in named.items() if v}
        return env

    def open_store(self, connect_timeout: float, session_timeout: float):
        """A new ZooKeeper session on this command's cluster, authenticated as its configuration says."""
        from bookie.meta.store import MetadataStore

        return MetadataStore(self.service_uri, connect_timeout, session_timeout, security=self.zk_security)

    @cached_property
    def session(self):
        """A ZooKeeper session for this command, closed when it ends; the root may hold no cluster (yet)."""
        from bookie.meta.store import SESSION_TIMEOUT

        store = self.open_store(self.timeout, self.zk_timeout or SESSION_TIMEOUT)
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
        from bookie.client.config import ClientConfig
        from bookie.daemon import collect_less

        config = ClientConfig.from_environment(os.environ, tls=self.client_tls)  # and BKCTL_USE_V2_WIRE_PROTOCOL
        client = BookKeeper(store=self.metadata, config=config)
        self.ctx.call_on_close(client.close)
        collect_less()  # this command moves entries now
        return client

    @cached_property
    def client_tls(self):
        """TLS to the bookies (bookie.tls.TlsSettings, or None). Each part from the --tls-* options (or BKCTL_TLS_*
        variables), else from the TLS of the context that names the cluster, else the tls* keys of -c, else the
        secure sandbox's when the sandbox is the cluster: the trust store; the client certificate with its key and
        password; hostname verification."""
        flags = {k: v for k, v in self.tls_flags.items() if v is not None}
        given = any(flags.get(k) for k in ("trust_store", "cert", "key", "key_password_file"))
        complete = flags.get("trust_store") and (flags.get("cert") or flags.get("key"))
        configured, source = (None, None) if complete else self._configured_tls()
        if given:
            settings = _tls_from_options(flags, configured)
            source = "--tls-* options or BKCTL_TLS_* variables" + (f", and {source}" if source else "")
        elif configured is not None and "hostname_verification" in flags:
            settings = replace(configured, hostname_verification=flags["hostname_verification"])
        else:
            settings = configured
        if settings is not None:
            self.terminal.info(f"TLS to the bookies (from {source})")
        return settings

    def _configured_tls(self):
        """The TLS that the cluster's context, -c or the secure sandbox gives (TlsSettings or None), and its source."""
        from bookie.tls import TlsSettings

        if self.context is not None and self.context.tls_trust_store:
            return self.context.tls_settings(), f"context {self.context.name}"
        if self.config:
            settings = TlsSettings.from_properties(self.config, "client", f" in {self.conf_path}")
            return settings, (self.conf_path if settings is not None else None)
        if self._sandbox is not None:
            settings = self._sandbox.client_tls()
            return settings, ("the secure sandbox" if settings is not None else None)
        return None, None

    @cached_property
    def _sandbox(self):
        """The running sandbox, when it is the cluster (nothing else names one), else None."""
        if self._named_by() is not None or self.context is not None:
            return None
        from bookie.local.sandbox import Sandbox

        sandbox = Sandbox()
        return sandbox if sandbox.running() is not None else None


def _tls_from_options(flags: dict, configured):
    """The --tls-* options over ``configured``, the TLS of the context, -c or sandbox (or None): the trust store,
    and the client certificate with its key, each from the options when they name it, else from ``configured``."""
    from bookie.tls import client_settings

    trust_store, cert, key, password = (flags.get(k) for k in ("trust_store", "cert", "key", "key_password_file"))
    if password and not key:
        raise InvalidArgument("--tls-key-password-file is the password of a key: give --tls-key too")
    if not trust_store and configured is None:
        raise InvalidArgument(
            "TLS needs --tls-trust-store (the CA certificates that signed the bookies'): no context, -c or secure "
            "sandbox names the cluster with one"
        )
    hostname = flags.get("hostname_verification", configured is not None and configured.hostname_verification)
    settings = client_settings(trust_store or configured.trust_store, cert, key, password, hostname)
    assert settings is not None  # a trust store is given
    if not trust_store:
        settings = replace(
            settings,
            trust_store_type=configured.trust_store_type,
            trust_store_password_path=configured.trust_store_password_path,
            trust_store_password=configured.trust_store_password,
        )
    if not (cert or key) and configured is not None and configured.client_authentication:
        settings = replace(
            settings,
            key_store_type=configured.key_store_type,
            key_store=configured.key_store,
            key_store_password_path=configured.key_store_password_path,
            key_store_password=configured.key_store_password,
            certificate_path=configured.certificate_path,
            client_authentication=True,
        )
    return settings
