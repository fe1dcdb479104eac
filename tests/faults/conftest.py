"""The fault suite's cluster: its own ZooKeeper (the nemesis kills it) and five bookies, shared by the module.

Its directory is not under pytest's basetemp (which keeps only the last three runs, and other runs on the machine
rotate it away): it is removed when every schedule passed and kept, with its logs, when one failed."""

import shutil
import tempfile

import pytest
from faults.cluster import FaultCluster


@pytest.fixture(scope="module")
def fault_cluster(request):
    directory = tempfile.mkdtemp(prefix="bkctl-faults-")
    failed_before = request.session.testsfailed
    cluster = FaultCluster(directory)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()
        if request.session.testsfailed == failed_before:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            print(f"\nthe fault cluster's files and logs are kept in {directory}")
