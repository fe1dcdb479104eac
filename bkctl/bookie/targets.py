"""``BOOKIE … | --all``: the bookies an admin command fans out to."""

from __future__ import annotations

import click


def bookies_argument(command):
    command = click.option("--all", "all_bookies", is_flag=True,
                           help="Every registered bookie, writable or read-only.")(command)
    return click.argument("bookie_ids", metavar="[BOOKIE]...", nargs=-1)(command)


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
        return bookies
    by_id = {b.bookie_id: b for b in bookies}
    missing = [i for i in bookie_ids if i not in by_id]
    if missing:
        raise NotFound(f"no registered bookie {', '.join(missing)}")
    return [by_id[i] for i in dict.fromkeys(bookie_ids)]


def require_known_bookies(app, bookie_ids) -> None:
    """Refuse (not found, exit 5) a bookie id the cluster has never heard of: not registered, no cookie, and named
    in no ledger's metadata. Commands about lost bookies must accept a bookie that is gone, but a typo must not
    read as "nothing to do, success"."""
    from bookie.errors import NotFound
    from bookie.meta.cookies import CookieStore
    from bookie.meta.registration import BookieRegistry

    unknown = set(bookie_ids) - {b.bookie_id for b in BookieRegistry(app.metadata).list(writable=True, readonly=True)}
    unknown -= set(CookieStore(app.metadata).list())
    if unknown:  # the costly part, only for ids neither registered nor with a cookie: stops once all are found
        for _, md in app.ledgers.iter_ledgers(on_corrupt=lambda exc: None):
            unknown -= {b for segment in md.segments for b in segment.bookies}
            if not unknown:
                break
    if unknown:
        names = ", ".join(sorted(unknown))
        raise NotFound(f"no bookie {names}: not registered, no cookie, and no ledger names it")
