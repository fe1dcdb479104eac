"""The cluster metadata checker (BP-34) and the impact check (BookKeeper: replication/Auditor.java)."""
