"""DbLedgerStorage (BookKeeper's ``org.apache.bookkeeper.bookie.storage.ldb``): entry logs indexed in RocksDB."""
