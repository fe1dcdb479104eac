"""DbLedgerStorage (BookKeeper's ``org.apache.bookkeeper.bookie.storage.ldb``): entry logs indexed in RocksDB."""

# The ledgerStorageClass values that select a storage (BookKeeper's class names)
DB_LEDGER_STORAGE = "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"
INTERLEAVED_LEDGER_STORAGE = "org.apache.bookkeeper.bookie.InterleavedLedgerStorage"
