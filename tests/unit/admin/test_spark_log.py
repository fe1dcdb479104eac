"""The Spark log of export, backup, restore and copy: removed when the command ends, kept and named when Spark
failed on its own."""

from __future__ import annotations

import os
import stat

import pytest

from admin.export.session import SparkFailed, spark_log
from bookie.errors import BKError, NoSuchLedger


@pytest.fixture(autouse=True)
def own_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR read again


def test_the_log_is_private_and_removed_when_all_went_well(tmp_path):
    with spark_log("bkctl-test-") as log:
        assert stat.S_IMODE(os.stat(log.parent).st_mode) == 0o700 and log.parent.parent == tmp_path
        log.write_text("Spark said things")
    assert not log.parent.exists()


def test_a_spark_failure_keeps_the_log_and_names_it():
    with pytest.raises(SparkFailed) as failed, spark_log("bkctl-test-") as log:
        log.write_text("Exception in thread main")
        raise SparkFailed("Spark did not start: no master")
    assert str(failed.value) == f"Spark did not start: no master (Spark's log: {log})"
    assert log.read_text() == "Exception in thread main"


@pytest.mark.parametrize("error", [BKError("a bookie failed"), NoSuchLedger("no ledger 7"), KeyboardInterrupt()])
def test_any_other_failure_removes_the_log_and_says_nothing_of_it(error):
    with pytest.raises(type(error)) as failed, spark_log("bkctl-test-") as log:
        log.write_text("Spark said things")
        raise error
    assert "Spark's log" not in str(failed.value) and not log.parent.exists()


def test_a_spark_failure_before_spark_wrote_a_log_is_raised_as_it_is():
    with pytest.raises(SparkFailed) as failed, spark_log("bkctl-test-") as log:
        raise SparkFailed("Spark failed: lost")
    assert str(failed.value) == "Spark failed: lost" and not log.parent.exists()
