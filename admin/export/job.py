"""The export on a Spark session: a plan's ledgers written as Parquet or JSON lines, then optionally verified.

Verification reads the written files back with Spark (so it works on any path Spark writes: local, HDFS, S3) and
checks, per ledger, the entry count (lastEntryId + 1, or LAC + 1 for an open ledger), that the entry ids run from 0
to the last, and the payload bytes against the metadata's length. A payload checksum ties the files to what was
read from the bookies: XOR over entries of ``xxhash64(ledgerId, entryId, payload)``, computed once as the rows
pass from the data source to the writer (a Spark observation, in the same job) and once over the files. XOR keeps
it independent of file and row order, and hashing the ids with the payload catches an entry moved or repeated.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from admin.export.plan import ExportPlan
from admin.export.session import TaskProgress
from admin.export.source import SCHEMA, BookKeeperDataSource
from bookie import errors

_CORE_ERROR = re.compile(r"bookie\.errors\.(\w+): (.+)")
_PYTHON_ERROR = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception): ")


@dataclass
class ExportReport:
    path: str
    format: str
    ledgers: int
    entries: int
    bytes: int
    files: int
    seconds: float
    verified: bool | None = None  # None: not asked
    problems: list[str] = field(default_factory=list)

    def doc(self) -> dict:
        return {"path": self.path, "format": self.format, "ledgers": self.ledgers, "entries": self.entries,
                "bytes": self.bytes, "files": self.files, "seconds": round(self.seconds, 3),
                "mbPerSec": round(self.bytes / self.seconds / 1e6, 1) if self.seconds else 0.0,
                "verified": self.verified, "problems": self.problems}


def spark_error(exc: Exception, path: str) -> errors.BKError:
    """A failed Spark job as the core's exception: the one a task or the planner raised, when there is one."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - py4j's rendering of some JVM errors fails; their arguments remain
        text = " ".join(map(str, exc.args)) or type(exc).__name__
    match = _CORE_ERROR.search(text)
    cls = getattr(errors, match.group(1), None) if match else None
    if isinstance(cls, type) and issubclass(cls, errors.BKError):
        return cls(match.group(2).strip())
    if "PATH_ALREADY_EXISTS" in text:
        return errors.InvalidArgument(f"{path} already exists: pass --overwrite to replace it")
    return errors.BKError(f"Spark failed: {_reason(text) or type(exc).__name__}")


def _reason(text: str) -> str | None:
    """The line that says what went wrong: a task's Python exception, else the JVM's, else the first line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if "Traceback (most recent call last):" in lines:
        tail = lines[lines.index("Traceback (most recent call last):") + 1:]
        found = next((line for line in tail if _PYTHON_ERROR.match(line)), None)
        if found:
            return found
    return next((line[2:] for line in lines if line.startswith(": ")), lines[0] if lines else None)


@contextlib.contextmanager
def _spark_errors(path: str):
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        yield
    except (PySparkException, Py4JError) as exc:
        raise spark_error(exc, path) from None


def _checksum():
    from pyspark.sql import functions as F

    return F.bit_xor(F.xxhash64("ledgerId", "entryId", "payload"))


def run_export(spark, service_uri: str, plan: ExportPlan, path: str, work_dir: Path, fmt: str = "parquet",
               overwrite: bool = False, verify: bool = False,
               progress: Callable[[int, int], None] | None = None) -> ExportReport:
    """Write the plan's ledgers to ``path``; ``progress(completed, total)`` gets the write's task counts.

    ``work_dir`` (private to the caller) holds the plan for the data source. ``seconds`` is the write job's time.
    """
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    plan_file = work_dir / "plan.pickle"
    with open(os.open(plan_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        pickle.dump(plan, f)  # it carries the ledgers' passwords: readable by us only
    spark.dataSource.register(BookKeeperDataSource)
    group = f"bkctl-export-{uuid.uuid4().hex[:12]}"
    spark.sparkContext.setJobGroup(group, f"export {len(plan.ledgers)} ledgers to {path}")
    with _spark_errors(path):
        frame = spark.read.format("bookkeeper").option("serviceUri", service_uri)
        frame = frame.option("planFile", str(plan_file)).load()
        observation = Observation("bkctl-export") if verify else None
        if observation is not None:
            frame = frame.observe(observation, F.count(F.lit(1)).alias("entries"), _checksum().alias("checksum"))
        writer = frame.write.format(fmt).mode("overwrite" if overwrite else "errorifexists")
        started = time.perf_counter()
        with TaskProgress(spark, group, progress) if progress else contextlib.nullcontext():
            writer.save(path)
        seconds = time.perf_counter() - started
        files = len(spark.read.schema(SCHEMA).format(fmt).load(path).inputFiles())
        report = ExportReport(path, fmt, len(plan.ledgers), plan.entries, plan.bytes, files, seconds)
        if observation is not None:
            report.problems = verify_output(spark, path, fmt, plan, observation.get)
            report.verified = not report.problems
    return report


def verify_output(spark, path: str, fmt: str, plan: ExportPlan, observed: dict) -> list[str]:
    """What is wrong with the files at ``path`` (nothing: an empty list)."""
    from pyspark.sql import functions as F

    written = spark.read.schema(SCHEMA).format(fmt).load(path).groupBy("ledgerId").agg(
        F.count(F.lit(1)).alias("entries"), F.sum(F.length("payload")).alias("bytes"),
        F.min("entryId").alias("first"), F.max("entryId").alias("last"), _checksum().alias("checksum"),
    ).collect()
    found = {row.ledgerId: row for row in written}
    problems = []
    for ledger in plan.ledgers:
        row = found.pop(ledger.ledger_id, None)
        entries = row.entries if row else 0
        if entries != ledger.entries:
            problems.append(f"ledger {ledger.ledger_id}: {entries} entries written, expected {ledger.entries}")
        elif row and (row.first, row.last) != (0, ledger.last_entry_id):
            problems.append(f"ledger {ledger.ledger_id}: entries {row.first}..{row.last} written, expected "
                            f"0..{ledger.last_entry_id}")
        elif row and row.bytes != ledger.length:
            problems.append(f"ledger {ledger.ledger_id}: {row.bytes} payload bytes written, its metadata says "
                            f"{ledger.length}")
    problems += [f"ledger {lid}: in the files but not in the export" for lid in sorted(found)]
    checksum = 0
    for row in written:
        checksum ^= row.checksum or 0
    if (observed.get("checksum") or 0) != checksum or (observed.get("entries") or 0) != sum(r.entries for r in written):
        problems.append(f"payload checksum of the files ({checksum:#x}) differs from that of the entries read "
                        f"({(observed.get('checksum') or 0):#x})")
    return problems
