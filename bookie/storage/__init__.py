"""The bookie's storage engine: journal, entry logs, index files behind a ledger cache, checkpoints and replay."""
