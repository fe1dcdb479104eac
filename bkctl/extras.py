"""Optional parts of bkctl, installed as pip extras (pyproject.toml), and the one line that says which is missing.

A bookie host needs neither: PySpark (~490 MB) and pyarrow (~170 MB) serve only ``ledger export``, and the
sandbox's embedded ZooKeeper on a host without one of its own (bkctl[sandbox]: PySpark's jars carry ZooKeeper).
"""

from __future__ import annotations

import importlib.util

from bookie.errors import BKError

EXTRAS = {"export": ("pyspark", "pyarrow")}


class MissingExtra(BKError):
    """A command needs an optional part of bkctl that is not installed (exit 1, as any failed operation)."""


def require(extra: str, command: str) -> None:
    """Raise :class:`MissingExtra` naming what to install when a module of ``extra`` cannot be imported."""
    missing = [module for module in EXTRAS[extra] if importlib.util.find_spec(module) is None]
    if missing:
        raise MissingExtra(
            f"{command} needs bkctl[{extra}] ({' and '.join(missing)} not installed): pip install 'bkctl[{extra}]'"
        )
