"""Autorecovery: the auditor and the replication workers (recovery.py), and their process (main.py)."""
