"""Generate the man pages in this folder from bkctl's click command tree.

    python man/generate.py            # rewrite man/*.1
    python man/generate.py --out DIR  # write elsewhere (the staleness test uses this)

bkctl(1) documents the global options, environment, files and exit status (from bkctl.errors, the one exit-code
table). Each top-level noun gets one page, bkctl-<noun>(1), with a section per command under it down to the last
level (`bkctl bookie compaction suspend`): its usage, help and options; then EXAMPLES, a part per command, from
bkctl/examples.py (which --help shows too). One page per noun rather than per command: an operator reads `bookie`
as a whole (gc, gc-status and compaction belong together), `man bkctl-bookie` then /suspend finds a command, and
the 10 pages are the ones bkctl(1) lists.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

import click

MAN_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(MAN_DIR.parent))

from admin.check.checker import REPORT_FIELDS  # noqa: E402
from admin.drain import SUMMARY_FIELDS  # noqa: E402
from bkctl import __version__  # noqa: E402
from bkctl.cli import cli  # noqa: E402
from bkctl.errors import EXIT_CODE_MEANINGS  # noqa: E402
from bkctl.examples import EXAMPLES  # noqa: E402

ENVIRONMENT = {
    "BKCTL_SERVICE_URI": "The metadata service URI, as -u/--service-uri.",
    "BKCTL_CONF": "A bk_server.conf-style properties file, as -c/--conf.",
    "BKCTL_CONTEXT": "A context of the contexts file, as --context.",
    "BKCTL_TIMEOUT": "Seconds to wait for ZooKeeper, as --timeout.",
    "BKCTL_LOG_FORMAT": "How log records are written to stderr, text or json, as --log-format.",
    "BKCTL_SANDBOX_DIR": "The sandbox state directory (default ~/.local/state/bkctl/sandbox).",
    "BKCTL_LEDGER_PASSWORD": "The ledger password, as --password (which others see in ps; this they do not).",
    "BKCTL_ZK_ENABLE_SECURITY": "true: what bkctl creates in ZooKeeper is private to its login, as zkEnableSecurity "
    "in -c's file (which wins).",
    "BKCTL_ZK_DIGEST_AUTH_FILE": "A file (0600) whose first line is user:password: ZooKeeper digest authentication, "
    "as zkDigestAuthFile.",
    "BKCTL_ZK_JAAS_CONFIG": "A JAAS file (0600) whose Client section's DigestLoginModule username and password log in "
    "with SASL DIGEST-MD5, as java.security.auth.login.config.",
    "BKCTL_ZK_SASL_CLIENTCONFIG": "Another section of that JAAS file than Client, as zookeeper.sasl.clientconfig.",
    "XDG_CONFIG_HOME": "Where the contexts file is (default ~/.config).",
}
JSON_OUTPUT = {
    "cluster check": REPORT_FIELDS,
    "bookie drain": SUMMARY_FIELDS,
}  # the -o json fields of commands whose output scripts depend on
FILES = {
    "$XDG_CONFIG_HOME/bkctl/config.yaml": "The contexts (bkctl config), private to its owner (0600); "
    "~/.config/bkctl/config.yaml by default.",
}


def esc(text: str) -> str:
    """Escape text for roff: backslashes, hyphens, and dots or quotes at the start of a line."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line for line in text.split("\n"))


def _options(ctx: click.Context, command: click.Command) -> list[str]:
    out = []
    for param in command.get_params(ctx):
        if not isinstance(param, click.Option) or param.name == "help":
            continue
        record = param.get_help_record(ctx)
        if record:
            out += [".TP", f"\\fB{esc(record[0])}\\fR", esc(record[1])]
    return out


def _help(command: click.Command) -> str:
    return inspect.cleandoc(command.help or "").replace("\b\n", "")


def _section_command(path: str, command: click.Command, parent: click.Context) -> list[str]:
    """The section of ``command``, then those of the commands under it (a group: its help and their names)."""
    ctx = click.Context(command, info_name=path.split()[-1], parent=parent)
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines = [".SS " + esc(path), f"\\fB{esc(path)}\\fR {esc(usage)}", ".PP", esc(_help(command))]
    if isinstance(command, click.Group):
        names = command.list_commands(ctx)
        lines += [".PP", "Commands: " + ", ".join(f"\\fB{esc(name)}\\fR" for name in names) + "."]
        for name in names:
            lines += _section_command(f"{path} {name}", command.get_command(ctx, name), ctx)
        return lines
    options = _options(ctx, command)
    return lines + ([".PP", "Options:", ".RS", *options, ".RE"] if options else [])


def _examples(paths: list[str]) -> list[str]:
    """The EXAMPLES section: per command, its examples as comment and command line."""
    lines = [".SH EXAMPLES"]
    for path in paths:
        if path not in EXAMPLES:  # tests/unit/test_examples.py asks for them
            continue
        lines += [".SS " + esc(f"bkctl {path}".strip()), ".RS", ".nf"]
        for command, comment in EXAMPLES[path]:
            lines += [esc(f"# {comment}"), esc(command), ""]
        lines[-1:] = [".fi", ".RE"]
    return lines


def _json_output(paths: list[str]) -> list[str]:
    """The JSON OUTPUT section: per command that has one, each field of its -o json document and what it means."""
    lines = []
    for path in paths:
        if path in JSON_OUTPUT:
            lines += [".SS " + esc(f"bkctl {path} -o json")]
            for field, meaning in JSON_OUTPUT[path].items():
                lines += [".TP", f"\\fB{esc(field)}\\fR", esc(meaning)]
    return [".SH JSON OUTPUT", *lines] if lines else []


def _leaves(command: click.Command, path: str, ctx: click.Context) -> list[str]:
    """The paths of the commands (not groups) under ``command``, in the order of the COMMANDS sections."""
    if not isinstance(command, click.Group):
        return [path]
    sub_ctx = click.Context(command, info_name=path.split()[-1], parent=ctx)
    return [
        leaf
        for name in command.list_commands(sub_ctx)
        for leaf in _leaves(command.get_command(sub_ctx, name), f"{path} {name}", sub_ctx)
    ]


def _header(name: str, summary: str) -> list[str]:
    return [
        f'.TH {esc(name.upper())} 1 "" "bkctl {__version__}" "bkctl manual"',
        ".SH NAME",
        f"{esc(name)} \\- {esc(summary)}",
    ]


def root_page() -> str:
    ctx = click.Context(cli, info_name="bkctl", **cli.context_settings)
    lines = _header("bkctl", cli.get_short_help_str(200))
    lines += [".SH SYNOPSIS", "\\fBbkctl\\fR [\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]..."]
    paragraphs = [p for p in _help(cli).split("\n\n") if not p.startswith("Exit codes")]  # EXIT STATUS has them
    lines += [".SH DESCRIPTION"]
    for paragraph in paragraphs:
        lines += [esc(paragraph), ".PP"]
    lines.pop()
    lines += [".SH OPTIONS", *_options(ctx, cli)]
    lines += [".SH COMMANDS"]
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        lines += [".TP", f"\\fBbkctl-{esc(name)}\\fR(1)", esc(command.get_short_help_str(200))]
    lines += [".SH ENVIRONMENT"]
    for name, meaning in ENVIRONMENT.items():
        lines += [".TP", f"\\fB{name}\\fR", esc(meaning)]
    lines += [".SH FILES"]
    for name, meaning in FILES.items():
        lines += [".TP", f"\\fI{esc(name)}\\fR", esc(meaning)]
    lines += [".SH EXIT STATUS"]
    for code, meaning in EXIT_CODE_MEANINGS.items():
        lines += [".TP", f"\\fB{int(code)}\\fR", esc(meaning)]
    lines += _examples([""])
    return "\n".join(lines) + "\n"


def command_page(name: str) -> str:
    root = click.Context(cli, info_name="bkctl", **cli.context_settings)
    command = cli.get_command(root, name)
    lines = _header(f"bkctl-{name}", command.get_short_help_str(200))
    lines += [".SH DESCRIPTION", esc(_help(command)), ".SH COMMANDS"]
    if isinstance(command, click.Group):
        group_ctx = click.Context(command, info_name=name, parent=root)
        for sub in command.list_commands(group_ctx):
            lines += _section_command(f"bkctl {name} {sub}", command.get_command(group_ctx, sub), group_ctx)
    else:
        lines += _section_command(f"bkctl {name}", command, root)
    lines += _json_output(_leaves(command, name, root))
    lines += _examples(_leaves(command, name, root))
    lines += [".SH SEE ALSO", "\\fBbkctl\\fR(1)"]
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    ctx = click.Context(cli, info_name="bkctl", **cli.context_settings)
    out = {"bkctl.1": root_page()}
    for name in cli.list_commands(ctx):
        out[f"bkctl-{name}.1"] = command_page(name)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=MAN_DIR)
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("bkctl*.1"):
        stale.unlink()
    for name, text in pages().items():
        (out / name).write_text(text)
    print(f"wrote {len(pages())} man pages to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
