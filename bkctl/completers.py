"""Shell completion of what the cluster, the contexts file and the sandbox know: click's ``shell_complete``
callbacks, for the options and arguments that name a bookie, a ledger, a context or a sandbox bookie."""

from __future__ import annotations

import click

from bkctl import contexts
from bkctl.app import Application

COMPLETION_TIMEOUT = 1.0  # seconds: ZooKeeper's budget per completion; a cluster out of reach completes nothing
COMPLETION_LIMIT = 1000  # candidates at most: a shell shows no more usefully


def _from_cluster(ctx: click.Context, incomplete: str, names) -> list[str]:
    """``names(store)`` read from the cluster this command line names (its -u, -c, context or the sandbox), that
    start with ``incomplete``; nothing, silently, when the cluster cannot be named or reached in time."""
    import logging
    import time

    logging.getLogger("kazoo").setLevel(logging.CRITICAL)  # no "connection refused" lines on the shell's prompt
    found = []
    try:
        app = Application.of(ctx)
        timeout = min(app.timeout, COMPLETION_TIMEOUT)
        with app.open_store(timeout, max(timeout, 4)) as store:
            deadline = time.monotonic() + COMPLETION_TIMEOUT
            for name in names(store):
                if name.startswith(incomplete):
                    found.append(name)
                if len(found) >= COMPLETION_LIMIT or time.monotonic() > deadline:
                    break
    except Exception:  # noqa: BLE001 - completion never fails a shell: a bad URI, config or cluster completes nothing
        pass
    return found


def _bookie_ids(store):
    from bookie.meta.registration import BookieRegistry

    return [b.bookie_id for b in BookieRegistry(store).list(writable=True, readonly=True)]


def _known_bookie_ids(store):
    from bookie.meta.membership import missing_bookies

    yield from _bookie_ids(store)
    yield from (m.bookie_id for m in missing_bookies(store))


def _ledger_ids(store):
    from bookie.meta.ledger_manager import LedgerManager

    return (str(i) for i in LedgerManager(store).iter_ledger_ids())


def _next_in_list(ctx: click.Context, incomplete: str, names) -> list[str]:
    """``names`` to complete the last id of a BOOKIE,BOOKIE list (or a single one), leaving out those listed."""
    done, comma, last = incomplete.rpartition(",")
    listed = set(done.split(",")) if comma else set()
    return [done + comma + i for i in _from_cluster(ctx, last, names) if i not in listed]


def complete_bookie_ids(ctx: click.Context, _param, incomplete: str) -> list[str]:
    """The registered bookies (writable and read-only); after a comma, the next one of a BOOKIE,BOOKIE list."""
    return _next_in_list(ctx, incomplete, _bookie_ids)


def complete_known_bookie_ids(ctx: click.Context, _param, incomplete: str) -> list[str]:
    """The registered bookies, then the missing ones that have a cookie (it reads no ledger): for the commands
    about a bookie that is gone; after a comma, the next one of a BOOKIE,BOOKIE list."""
    return _next_in_list(ctx, incomplete, _known_bookie_ids)


def complete_ledger_ids(ctx: click.Context, _param, incomplete: str) -> list[str]:
    """The cluster's ledger ids, ascending (as many as the time allows)."""
    return _from_cluster(ctx, incomplete, _ledger_ids)


def complete_context_names(_ctx: click.Context, _param, incomplete: str) -> list[str]:
    """The contexts of the contexts file."""
    try:
        names = contexts.load().contexts
    except Exception:  # noqa: BLE001 - completion never fails a shell: a broken contexts file completes nothing
        return []
    return [name for name in sorted(names) if name.startswith(incomplete)]


def complete_sandbox_bookies(ctx: click.Context, _param, incomplete: str) -> list[str]:
    """The sandbox's bookies by number, from its state file (stopped ones too; no ZooKeeper needed)."""
    from bookie.local.sandbox import Sandbox

    try:
        state = Sandbox(ctx.params.get("state_dir")).load()
    except Exception:  # noqa: BLE001 - completion never fails a shell: an unreadable sandbox completes nothing
        return []
    names = [str(b.index) for b in state.local_bookies()] if state else []
    return [name for name in names if name.startswith(incomplete)]
