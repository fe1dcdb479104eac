"""The cluster metadata checker (BP-34) and the impact check (spec/audit-and-recovery.md)."""
