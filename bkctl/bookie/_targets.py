"""``BOOKIE … | --all``: the bookies an admin command fans out to."""

from __future__ import annotations

import click

from bkctl.completers import complete_bookie_ids

HTTP_PORT = "bkctl.http_port"


def http_port_option(command):
    """``--http-port``: the admin operation goes to BookKeeper's HTTP admin API on that port of each bookie."""

    def remember(ctx: click.Context, _param, value):
        if value is not None:
            ctx.meta[HTTP_PORT] = value

    return click.option(
        "--http-port",
        type=click.IntRange(1, 65535),
        expose_value=False,
        callback=remember,
        metavar="PORT",
        help="Use BookKeeper's HTTP admin API on this port of the bookies (a Java "
        "bookie whose registration does not publish it; httpServerPort).",
    )(command)


def bookies_argument(command=None, *, http: bool = True):
    """``[BOOKIE]... | --all`` (and ``--http-port`` for the commands that may go over BookKeeper's HTTP admin API)."""
    if command is None:
        return lambda command: bookies_argument(command, http=http)
    if http:
        command = http_port_option(command)
    command = click.option(
        "--all", "all_bookies", is_flag=True, help="Every registered bookie, writable or read-only."
    )(command)
    return click.argument("bookie_ids", metavar="[BOOKIE]...", nargs=-1, shell_complete=complete_bookie_ids)(command)


def over_http_if_asked(bookies: list) -> list:
    """The bookies, reached over HTTP on ``--http-port`` when it was given, else on the http-port of the context
    that names the cluster when it has one."""
    ctx = click.get_current_context()
    port = ctx.meta.get(HTTP_PORT) or ctx.find_root().obj.http_port
    return [b.over_http(port) for b in bookies] if port else bookies


def target_bookies(app, bookie_ids: tuple[str, ...], all_bookies: bool) -> list:
    """The registered bookies named, or all of them; an unknown name is an error before anything is sent."""
    from bookie.errors import InvalidArgument, NotFound
    from bookie.meta.registration import BookieRegistry

    if bool(bookie_ids) == all_bookies:
        raise InvalidArgument("name one or more BOOKIEs, or pass --all")
    registry = BookieRegistry(app.metadata)
    bookies = registry.list(writable=True, readonly=True)
    if all_bookies:
        if not bookies:
            raise NotFound("no bookies are registered")
        return over_http_if_asked(bookies)
    by_id = {b.bookie_id: b for b in bookies}
    missing = [i for i in bookie_ids if i not in by_id]
    if missing:
        raise NotFound(f"no registered bookie {', '.join(missing)}")
    return over_http_if_asked([by_id[i] for i in dict.fromkeys(bookie_ids)])


def require_known_bookies(app, bookie_ids) -> None:
    """Refuse (not found, exit 5) a bookie id the cluster has never heard of: not registered, no cookie, and named
    in no ledger's metadata. Commands about lost bookies must accept a bookie that is gone, but a typo must not
    read as "nothing to do, success"."""
    from bookie.errors import NotFound
    from bookie.meta.membership import unknown_bookies

    unknown = unknown_bookies(app.metadata, bookie_ids)
    if unknown:
        names = ", ".join(sorted(unknown))
        raise NotFound(f"no bookie {names}: not registered, no cookie, and no ledger names it")


def outcome_docs(app, outcomes, doc) -> list[dict]:
    """The bookies that answered, each as ``doc(result)`` with its bookieId; each that did not is a warning on
    stderr (and in the exit code: :func:`bkctl.errors.exit_for_errors`), never a row."""
    docs = []
    for outcome in outcomes:
        if outcome.error is not None:
            app.terminal.warn(str(outcome.error))
        else:
            docs.append({"bookieId": outcome.bookie_id, **doc(outcome.result)})
    return docs
