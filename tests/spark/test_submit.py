"""The spark-submit entry point: bkctl's __main__.py as the application, the export's options after it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pyspark

import bkctl


def test_spark_submit_runs_the_same_export(three_bookies, mixed_ledgers, tmp_path):
    uri = three_bookies.service_uri
    ledgers = mixed_ledgers(uri, 5, seed=2)
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    entry_point = Path(bkctl.__file__).with_name("__main__.py")
    out = tmp_path / "out"
    command = [
        str(submit),
        "--master",
        "local[1]",
        "--conf",
        "spark.driver.host=127.0.0.1",
        "--conf",
        "spark.driver.bindAddress=127.0.0.1",
        "--conf",
        "spark.ui.enabled=false",
        str(entry_point),
        "-u",
        uri,
        "ledger",
        "export",
        *map(str, ledgers),
        "--to",
        str(out),
        "--verify",
        "-o",
        "json",
    ]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)  # stdout is the summary only: Spark's logging went to stderr
    assert doc["ledgers"] == 5 and doc["verified"] is True
    rows = pq.read_table(out)
    assert sorted(
        zip(rows["ledgerId"].to_pylist(), rows["entryId"].to_pylist(), rows["payload"].to_pylist(), strict=True)
    ) == [(lid, eid, p) for lid in sorted(ledgers) for eid, p in enumerate(ledgers[lid])]
