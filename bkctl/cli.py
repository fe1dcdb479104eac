"""The root ``bkctl`` group. Command groups are imported only when used, so ``bkctl --help`` stays instant."""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import sys

import click

from bkctl import __version__, examples
from bkctl.completers import complete_context_names
from bkctl.contexts import MAX_TIMEOUT
from bkctl.errors import ExitCode, exit_code_for, exit_codes_summary
from bkctl.options import finite_seconds, log_format_option
from bookie.daemon import interruption
from bookie.errors import BKError

COMMANDS = {
    "bookie": "bkctl.bookie:bookie",
    "bench": "bkctl.bench:bench",
    "autorecovery": "bkctl.autorecovery:autorecovery",
    "bookies": "bkctl.bookies:bookies",
    "cluster": "bkctl.cluster:cluster",
    "completion": "bkctl.completion:completion",
    "config": "bkctl.config:config",
    "cookie": "bkctl.cookie:cookie",
    "ledger": "bkctl.ledger:ledger",
    "pulsar": "bkctl.pulsar:pulsar",
    "sandbox": "bkctl.sandbox:sandbox",
    "top": "bkctl.top:top",
}


class RootGroup(click.Group):
    """Loads command groups lazily and turns core errors into one line on stderr and an exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attr = COMMANDS[name].split(":")
        command = getattr(importlib.import_module(module), attr)
        examples.attach(command, name)
        return command

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:  # a bad global option: `bkctl --bogus`, `bkctl --timeout x`
            _fail(exc)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:  # usage errors of subcommands and option callbacks
            _fail(exc)
        except click.exceptions.Abort:  # a confirmation prompt answered no, or ended by EOF
            click.echo("error: aborted", err=True)
            ctx.exit(ExitCode.FAILED)
        except (BKError, KeyboardInterrupt) as exc:
            message = str(exc) if isinstance(exc, BKError) else interruption(exc)
            click.echo(f"error: {message}", err=True)
            ctx.exit(exit_code_for(exc))
        except BrokenPipeError:  # `bkctl ledger list | head`
            ctx.exit(ExitCode.OK)


def _fail(exc: click.ClickException) -> None:
    """Report a click error the way every other error is reported: one line, ``error: ...``. click's own display
    is four lines (usage, a hint, a blank line, the message); `--help` still shows the usage in full."""
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):  # a bare `bkctl ledger`: its help, as click shows it
        exc.show()
        sys.exit(exc.exit_code)
    message = " ".join(line.strip() for line in exc.format_message().splitlines() if line.strip())
    click.echo(f"error: {message}", err=True)
    sys.exit(exc.exit_code)


def _terminate_on_sigterm(ctx: click.Context) -> None:
    """SIGTERM raises :class:`Terminated` (a KeyboardInterrupt) in the main thread while the command runs: it closes
    or deletes what it opened on the way out, as for Ctrl-C, instead of dying in the middle (exit 143, 128+15)."""
    import signal
    import threading

    from bookie.daemon import raise_terminated

    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, raise_terminated)
        ctx.call_on_close(lambda: signal.signal(signal.SIGTERM, previous))


def _configure_logging(verbosity: int, log_format: str) -> None:
    from bookie import logs

    level = {0: logging.ERROR, 1: logging.INFO}.get(verbosity, logging.DEBUG)
    logs.configure(level, log_format)
    # kazoo reports every refused connection attempt; the command reports the outcome in one line instead.
    logging.getLogger("kazoo").setLevel(level if verbosity >= 2 else logging.CRITICAL)


@click.group(cls=RootGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=examples.epilog(""))
@click.option(
    "-u",
    "--service-uri",
    envvar="BKCTL_SERVICE_URI",
    metavar="URI",
    help="Metadata service, e.g. zk+hierarchical://zk1:2181;zk2:2181/ledgers [env BKCTL_SERVICE_URI; "
    "default: the running sandbox].",
)
@click.option(
    "-c",
    "--conf",
    envvar="BKCTL_CONF",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="A bk_server.conf-style properties file; its metadataServiceUri is used when -u is not given "
    "[env BKCTL_CONF].",
)
@click.option(
    "--context",
    envvar="BKCTL_CONTEXT",
    metavar="NAME",
    shell_complete=complete_context_names,
    help="Use this context of `bkctl config` instead of the current one [env BKCTL_CONTEXT].",
)
@click.option(
    "--timeout",
    envvar="BKCTL_TIMEOUT",
    type=click.FloatRange(0, MAX_TIMEOUT, min_open=True),
    callback=finite_seconds,
    metavar="SECONDS",
    help="Give up reaching ZooKeeper after this long, exit 6 [env BKCTL_TIMEOUT; default: zkTimeout of -c or the "
    "context's timeout, else 8].",
)
@click.option(
    "--tls-trust-store",
    envvar="BKCTL_TLS_TRUST_STORE",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="TLS to the bookies: the CA certificates to trust, PEM or PKCS12 [env BKCTL_TLS_TRUST_STORE; default: the "
    "context's, -c's tls* keys, or the secure sandbox's].",
)
@click.option(
    "--tls-cert",
    envvar="BKCTL_TLS_CERT",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="The client certificate chain (PEM) for --tls-key [env BKCTL_TLS_CERT; default, with --tls-key: the "
    "context's, -c's tls* keys, or the secure sandbox's].",
)
@click.option(
    "--tls-key",
    envvar="BKCTL_TLS_KEY",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="The client's private key, PEM, or a PKCS12 store; readable by its owner only [env BKCTL_TLS_KEY; "
    "default, with --tls-cert: the context's, -c's tls* keys, or the secure sandbox's].",
)
@click.option(
    "--tls-key-password-file",
    envvar="BKCTL_TLS_KEY_PASSWORD_FILE",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="A file holding the key's (or PKCS12 store's) password, readable by its owner only "
    "[env BKCTL_TLS_KEY_PASSWORD_FILE].",
)
@click.option(
    "--tls-hostname-verification",
    envvar="BKCTL_TLS_HOSTNAME_VERIFICATION",
    is_flag=True,
    default=None,
    help="Check that each bookie's certificate names its address (tlsHostnameVerificationEnabled) "
    "[env BKCTL_TLS_HOSTNAME_VERIFICATION].",
)
@click.option("-v", "--verbose", count=True, help="More diagnostics on stderr (-vv for debug logs).")
@log_format_option
@click.version_option(__version__, prog_name="bkctl")
@click.pass_context
def cli(
    ctx: click.Context,
    service_uri: str | None,
    conf: str | None,
    context: str | None,
    timeout: float | None,
    tls_trust_store: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    tls_key_password_file: str | None,
    tls_hostname_verification: bool | None,
    verbose: int,
    log_format: str,
) -> None:
    """Operate a BookKeeper-style bookie cluster: its metadata, bookies and ledgers.

    The cluster: -u, else -c, else --context (options before environment variables), else the current context
    (`bkctl config use-context`), else the running sandbox; -v says which.
    """
    from bkctl.app import Application

    _terminate_on_sigterm(ctx)
    _configure_logging(verbose, log_format)
    ctx.obj = Application(ctx, service_uri, conf, verbose, timeout, context, log_format)
    ctx.obj.tls_flags = {
        "trust_store": tls_trust_store,
        "cert": tls_cert,
        "key": tls_key,
        "key_password_file": tls_key_password_file,
        "hostname_verification": tls_hostname_verification,
    }


cli.help = f"{inspect.cleandoc(cli.help or '')}\n\nExit codes (bkctl.errors, the one table): {exit_codes_summary()}."


def main() -> None:
    if "_BKCTL_COMPLETE" in os.environ:  # a shell asks for completions
        import bkctl.completion  # noqa: F401  (bash's completion, which keeps host:port one word)
    cli(prog_name="bkctl")
