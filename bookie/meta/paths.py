"""Ledger znode paths of the hierarchical ledger managers (BookKeeper: meta/HierarchicalLedgerManager.java,
LongHierarchicalLedgerManager.java).

- short form, ids below 2^31 - 1: ``s = "%010d" % id`` → ``<root>/<s[0:2]>/<s[2:6]>/L<s[6:10]>``
- long form, otherwise:          ``s = "%019d" % id`` → ``<root>/<s[0:3]>/<s[3:7]>/<s[7:11]>/<s[11:15]>/L<s[15:19]>``

``longhierarchical`` always uses the long form, ``legacyhierarchical`` always the short one.
"""

from __future__ import annotations

from bookie.errors import InvalidArgument

SHORT_ID_LIMIT = 2**31 - 1  # ids strictly below use the short form
MAX_LEDGER_ID = 2**63 - 1


def uses_long_form(ledger_id: int, manager: str = "hierarchical") -> bool:
    if manager == "longhierarchical":
        return True
    if manager == "legacyhierarchical":
        return False
    return ledger_id >= SHORT_ID_LIMIT


def ledger_path(root: str, ledger_id: int, manager: str = "hierarchical") -> str:
    if not 0 <= ledger_id <= MAX_LEDGER_ID:
        raise InvalidArgument(f"ledger id {ledger_id} out of range (0 to {MAX_LEDGER_ID})")
    if uses_long_form(ledger_id, manager):
        s = f"{ledger_id:019d}"
        return f"{root}/{s[0:3]}/{s[3:7]}/{s[7:11]}/{s[11:15]}/L{s[15:19]}"
    if ledger_id >= 10**10:
        raise InvalidArgument(f"ledger id {ledger_id} does not fit the short path form of {manager}")
    s = f"{ledger_id:010d}"
    return f"{root}/{s[0:2]}/{s[2:6]}/L{s[6:10]}"


def parse_ledger_path(root: str, path: str) -> int:
    """The ledger id of a ledger znode path (3 parts = short form, 5 = long form)."""
    if not path.startswith(root + "/"):
        raise InvalidArgument(f"{path} is not under {root}")
    parts = path[len(root) + 1 :].split("/")
    if len(parts) not in (3, 5) or not parts[-1].startswith("L"):
        raise InvalidArgument(f"{path} is not a ledger path")
    digits = "".join(parts[:-1]) + parts[-1][1:]
    if not digits.isdigit():
        raise InvalidArgument(f"{path} is not a ledger path")
    return int(digits)


def parse_ledger_id(text: str) -> int:
    """A ledger id given by a user: a decimal integer in range."""
    value = text.strip()
    if not value.isdigit() or int(value) > MAX_LEDGER_ID:
        raise InvalidArgument(f"invalid ledger id {text!r}: expected an integer from 0 to {MAX_LEDGER_ID}")
    return int(value)
