"""Pulsar-aware audits of a cluster's ledgers: who owns each one, which are orphaned, where the bytes are."""
