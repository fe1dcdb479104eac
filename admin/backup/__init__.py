"""Backups of a cluster: its ledgers' metadata and, optionally, their entries, with a manifest of checksums."""
