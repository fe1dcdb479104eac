"""Options that mean the same on every command."""

from __future__ import annotations

import click

FORMATS = ("table", "wide", "json", "yaml")


def output_option(command):
    """``-o/--output table|wide|json|yaml``: how to print the data."""

    def apply(ctx: click.Context, _param, value: str) -> str:
        ctx.find_object(_app_class()).terminal.output = value
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


def dry_run_option(command):
    return click.option("--dry-run", is_flag=True, help="Show what would change, change nothing.")(command)


def sandbox_dir_option(command):
    return click.option(
        "--dir",
        "state_dir",
        envvar="BKCTL_SANDBOX_DIR",
        type=click.Path(file_okay=False),
        help="Sandbox state directory [env BKCTL_SANDBOX_DIR; default ~/.local/state/bkctl/sandbox].",
    )(command)


def _app_class():
    from bkctl.app import Application

    return Application


def settings_option(help_text: str):
    """``--set KEY=VALUE`` (repeatable): configuration keys, collected into a dict."""

    def parse(ctx, _param, values: tuple[str, ...]) -> dict[str, str]:
        settings = {}
        for value in values:
            key, sep, text = value.partition("=")
            if not sep or not key.strip():
                raise click.BadParameter(f"{value!r} is not KEY=VALUE", ctx=ctx)
            settings[key.strip()] = text
        return settings

    return click.option("--set", "settings", multiple=True, callback=parse, metavar="KEY=VALUE", help=help_text)


def password_options(command):
    """``--password P`` / ``--password-file F``: the ledger's password (empty by default)."""
    command = click.option("--password-file", type=click.Path(exists=True, dir_okay=False),
                           help="Read the password from the first line of a file.")(command)
    return click.option("--password", help="The ledger's password [default: empty].")(command)


def read_password(password: str | None, password_file: str | None) -> bytes:
    if password is not None and password_file is not None:
        raise click.UsageError("give --password or --password-file, not both")
    if password_file is not None:
        with open(password_file, "rb") as f:
            return f.readline().rstrip(b"\r\n")
    return (password or "").encode()


def quorum_options(command):
    """``-e/-w/-a``: ensemble size, write quorum, ack quorum."""
    command = click.option("-a", "--ack-quorum", type=click.IntRange(1), default=2, show_default=True)(command)
    command = click.option("-w", "--write-quorum", type=click.IntRange(1), default=2, show_default=True)(command)
    return click.option("-e", "--ensemble", type=click.IntRange(1), default=3, show_default=True)(command)


def log_format_option(command=None, *, default: str | None = "text"):
    """``--log-format text|json``: how log records go to stderr (bkctl.logs). The root's reads BKCTL_LOG_FORMAT;
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
