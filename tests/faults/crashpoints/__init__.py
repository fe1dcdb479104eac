"""The crash-point sweep (CrashMonkey, ALICE): every sync of short scripted workloads, cut in turn, on both storages.
``sweep(workloads, storages, directory, progress)`` runs it; ``python -m faults.crashpoints`` is the command."""

from faults.crashpoints.sweep import STORAGES, SweepResult, Workload, sweep
from faults.crashpoints.workloads import WORKLOADS

__all__ = ["STORAGES", "WORKLOADS", "SweepResult", "Workload", "sweep"]
