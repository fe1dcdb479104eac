"""Options that mean the same on every command."""

from __future__ import annotations

import click

from bkctl.app import Application
from bkctl.completers import complete_ledger_ids

FORMATS = ("table", "wide", "json", "yaml")


def output_option(command):
    """``-o/--output table|wide|json|yaml``: how to print the data."""

    def apply(ctx: click.Context, _param, value: str) -> str:
        app = ctx.find_object(Application)
        if app is not None:  # None while a shell completes the command line: the root's callback did not run
            app.terminal.output = value
        return value

    return click.option(
        "-o",
        "--output",
        type=click.Choice(FORMATS),
        default="table",
        show_default=True,
        expose_value=False,
        callback=apply,
        help="Output format: table for people, wide for more columns, json or yaml for scripts.",
    )(command)


def finite_seconds(_ctx, param, value: float | None) -> float | None:
    """A callback for a FloatRange of seconds: NaN passes every range comparison."""
    if value is not None and value != value:
        raise click.BadParameter("nan is not a number of seconds", param_hint=f"'{param.opts[-1]}'")
    return value


def wait_options(many: bool):
    """``--wait`` and ``--timeout S`` of a command that hands bookies a GC run (``many``: one run per bookie)."""
    runs, go, did = ("the runs", "go", "they") if many else ("the run", "goes", "it")

    def apply(command):
        command = click.option(
            "--timeout",
            type=click.FloatRange(min=0),
            default=3600,
            show_default=True,
            metavar="S",
            help=f"With --wait: give up after S seconds (exit 1; {runs} {go} on).",
        )(command)
        return click.option("--wait", is_flag=True, help=f"Wait for {runs} to finish and show what {did} did.")(command)

    return apply


def dry_run_option(command):
    return click.option("--dry-run", is_flag=True, help="Show what would change, change nothing.")(command)


def spark_options(when: str = ""):
    """``--master`` and ``--conf`` of the commands that run a Spark job; ``when``: what the help says first (e.g.
    "With --data: ")."""

    def apply(command):
        command = click.option(
            "--conf",
            "spark_conf",
            multiple=True,
            callback=key_values(prefix="spark."),
            metavar="spark.KEY=VALUE",
            help=f"{when}A Spark setting (repeatable), as spark-submit --conf.",
        )(command)
        return click.option(
            "--master",
            metavar="MASTER",
            help=f"{when}Spark master: local[N], spark://HOST:PORT, yarn, k8s://... [default: local[*], or "
            "spark-submit's when run by it].",
        )(command)

    return apply


def sandbox_dir_option(command):
    return click.option(
        "--dir",
        "state_dir",
        envvar="BKCTL_SANDBOX_DIR",
        type=click.Path(file_okay=False),
        help="Sandbox state directory [env BKCTL_SANDBOX_DIR; default ~/.local/state/bkctl/sandbox].",
    )(command)


def key_values(prefix: str = ""):
    """The one KEY=VALUE parser of the CLI, a click callback for a repeatable option (``--set``, ``--meta``,
    ``--conf``): each value is KEY=VALUE, the key trimmed and not empty (and starting with ``prefix``), the value
    as written (commas and all); the last of a repeated key wins. Gives a dict."""

    def parse(ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
        pairs = {}
        for value in values:
            key, sep, text = value.partition("=")
            key = key.strip()
            if not sep or not key or not key.startswith(prefix):
                raise click.BadParameter(f"{value!r} is not {prefix}KEY=VALUE", ctx=ctx)
            pairs[key] = text
        return pairs

    return parse


def settings_option(help_text: str):
    """``--set KEY=VALUE`` (repeatable): configuration keys, collected into a dict."""
    return click.option("--set", "settings", multiple=True, callback=key_values(), metavar="KEY=VALUE", help=help_text)


def ledgers_option(help_text: str):
    """``--ledger ID`` (repeatable): only these ledgers, collected as ``ledger_ids``."""
    return click.option(
        "--ledger",
        "ledger_ids",
        type=click.IntRange(0),
        multiple=True,
        shell_complete=complete_ledger_ids,
        help=help_text,
    )


def password_options(command):
    """``--password P`` / ``--password-file F``: the ledger's password (empty by default)."""
    command = click.option(
        "--password-file",
        type=click.Path(dir_okay=False),
        help="Read the password from the first line of a file readable by its owner only (chmod 600).",
    )(command)
    return click.option(
        "--password",
        envvar="BKCTL_LEDGER_PASSWORD",
        show_envvar=False,
        help="The ledger's password; on a command line others see it in ps: prefer --password-file or "
        "BKCTL_LEDGER_PASSWORD [env BKCTL_LEDGER_PASSWORD; default: empty].",
    )(command)


def read_password(password: str | None, password_file: str | None) -> bytes:
    from bookie.conf import read_secret_file

    if password is not None and password_file is not None:
        raise click.UsageError("give --password or --password-file, not both")
    if password_file is not None:
        return read_secret_file(password_file, "ledger password file").split(b"\n", 1)[0].rstrip(b"\r")
    return (password or "").encode()


def quorum_options(command):
    """``-e/-w/-a``: ensemble size, write quorum, ack quorum."""
    command = click.option("-a", "--ack-quorum", type=click.IntRange(1), default=2, show_default=True)(command)
    command = click.option("-w", "--write-quorum", type=click.IntRange(1), default=2, show_default=True)(command)
    return click.option("-e", "--ensemble", type=click.IntRange(1), default=3, show_default=True)(command)


def log_format_option(command=None, *, default: str | None = "text"):
    """``--log-format text|json``: how log records go to stderr (bookie.logs). The root's reads BKCTL_LOG_FORMAT;
    a command's (``default=None``) overrides the root's for that command."""

    def decorate(command):
        return click.option(
            "--log-format",
            type=click.Choice(("text", "json")),
            default=default,
            envvar="BKCTL_LOG_FORMAT" if default else None,
            show_default=bool(default),
            help="Log records on stderr: one line of text each, or one JSON object per line for log shippers"
            + (" [env BKCTL_LOG_FORMAT]." if default else " [default: bkctl's --log-format]."),
        )(command)

    return decorate(command) if command is not None else decorate


def yes_option(command):
    return click.option("--yes", is_flag=True, help="Do not ask for confirmation.")(command)
