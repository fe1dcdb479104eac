"""``bkctl bookie usage``: one bookie's storage (a :class:`bookie.storage.usage.StorageView`) explained against the
ledgers' metadata. Pure functions over plain data, in the order they build on each other:

- ``expected.py``: what the metadata says the bookie should hold, ledger by ledger (write sets over ensembles);
- ``ledgers.py``: each ledger's state on the bookie (open, closed, deleted, not in the metadata, not owned) and owner;
- ``reclaim.py``: what a GC run's compaction would reclaim at a threshold (bookie/storage/gc.py's rules);
- ``logs.py``: each entry log's ledgers, live and dead bytes, and how a GC run sees it;
- ``reasons.py``: why the space is held, as reasons with bytes;
- ``explain.py``: all of it for one bookie, and its ``-o json`` document;
- ``sources.py``: where the view and the metadata come from (the bookie's admin service, its directories, ZooKeeper).
"""
