"""Offline tools over a stopped bookie's directories, Java's or ours (BookKeeper's shell commands that mount its
storage offline): list its files, check that its index points at entries the entry logs hold, rebuild a ledger's
index from the entry logs, format or check the directories for a new bookie. They read the files with the storage
engine's own format modules; the bkctl verbs hold the bookie's directory locks around the ones that need it."""
