"""What the racks verbs share: which mapping key names a bookie, and an entry as a row and a document."""

from __future__ import annotations

from typing import Any


def registered_by_name(app: Any) -> dict:
    """The registered bookies by id and by the host:port they publish (the id wins), once the mapping is known to
    be readable (CorruptData otherwise: the racks verbs stop on a damaged mapping, where a listing only logs it)."""
    from bookie.meta.racks import read_mapping
    from bookie.meta.registration import BookieRegistry

    read_mapping(app.metadata)
    bookies = BookieRegistry(app.metadata).list(writable=True, readonly=True)
    by_address = {"{}:{}".format(*b.address()): b for b in bookies}
    return {**by_address, **{b.bookie_id: b for b in bookies}}


def key_of(bookie_id: str, registered: dict, mapping: Any) -> str:
    """The mapping key of a bookie: the one its entry already has (its id, or the host:port it publishes), else
    BOOKIE as given, as `pulsar-admin bookies set-bookie-rack -b` writes it."""
    bookie = registered.get(bookie_id)
    if bookie is not None and mapping.get(bookie_id) is None:
        host, port = bookie.address()
        if mapping.get(f"{host}:{port}") is not None:
            return f"{host}:{port}"
    return bookie_id


def entry_doc(bookie_id: str, key: str | None, entry: Any, rack: str, source: str, registered: bool) -> dict:
    return {
        "bookieId": bookie_id,
        "address": key,  # the mapping's key; null when the mapping does not name the bookie
        "rack": rack,
        "hostname": entry.hostname if entry else None,
        "group": entry.group if entry else None,
        "source": source,
        "registered": registered,
    }
