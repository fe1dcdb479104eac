"""The export on a Spark session: a plan's partitions read and written by Spark's Python tasks, one file each, then
optionally verified.

Commit: each task attempt writes ``<path>/_temporary/<job>/<partition>-<attempt>/part-NNNNN.<format>``; once the
job succeeded, the driver removes what an earlier export left (``--overwrite``), moves each partition's file into
place, removes ``_temporary`` and writes ``_SUCCESS``. A failed export leaves the earlier files as they were.

Verification reads the written files back in Spark tasks and checks, per ledger, the entry count (lastEntryId + 1,
or LAC + 1 for an open ledger), that the entry ids run from 0 to the last, the payload bytes against the metadata's
length, and the payload checksum (:mod:`admin.export.part_files`) against the one the write tasks computed as the
entries came from the bookies.
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from pyarrow.fs import FileSelector, FileType

from admin.export.part_files import SUFFIX, HashingStream, LedgerStats, filesystem, read_file, write_file
from admin.export.plan import ExportPlan, Partition
from admin.export.session import SparkFailed, TaskProgress
from admin.export.source import ARROW_SCHEMA, BACKUP_ARROW_SCHEMA, read_partition, task_client
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
    # per file, as written: name, rows, fileBytes, sha256, ranges [(ledgerId, first, last)]
    outputs: list[dict] = field(default_factory=list)
    read: LedgerStats | None = None  # per ledger, of the entries as read from the bookies (with verify)

    def doc(self) -> dict:
        return {
            "path": self.path,
            "format": self.format,
            "ledgers": self.ledgers,
            "entries": self.entries,
            "bytes": self.bytes,
            "files": self.files,
            "seconds": round(self.seconds, 3),
            "mbPerSec": round(self.bytes / self.seconds / 1e6, 1) if self.seconds else 0.0,
            "verified": self.verified,
            "problems": self.problems,
        }


def spark_error(exc: Exception) -> errors.BKError:
    """A failed Spark job as the core's exception: the one a task or the planner raised, when there is one."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - py4j's rendering of some JVM errors fails; their arguments remain
        text = " ".join(map(str, exc.args)) or type(exc).__name__
    if match := _CORE_ERROR.search(text):
        cls = getattr(errors, match.group(1), None)
        if isinstance(cls, type) and issubclass(cls, errors.BKError):
            return cls(match.group(2).strip())
    return SparkFailed(f"Spark failed: {_reason(text) or type(exc).__name__}")


def _reason(text: str) -> str | None:
    """The line that says what went wrong: a task's Python exception, else the JVM's, else the first line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if "Traceback (most recent call last):" in lines:
        tail = lines[lines.index("Traceback (most recent call last):") + 1 :]
        found = next((line for line in tail if _PYTHON_ERROR.match(line)), None)
        if found:
            return found
    return next((line[2:] for line in lines if line.startswith(": ")), lines[0] if lines else None)


@contextlib.contextmanager
def _spark_errors():
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        yield
    except (PySparkException, Py4JError) as exc:
        raise spark_error(exc) from None


def _write_task(
    service_uri: str, path: str, job: str, fmt: str, verify: bool, partition: Partition, ledger_length: bool = False
) -> dict:
    """In a Spark task: read the partition from the bookies and write it as one file under ``_temporary``; the
    file's size and SHA-256 are taken as it is written."""
    from pyspark import TaskContext

    context = TaskContext.get()
    attempt = context.attemptNumber() if context is not None else 0
    fs, root = filesystem(path)
    directory = f"{root}/_temporary/{job}/{partition.index}-{attempt}"
    name = f"part-{partition.index:05d}.{SUFFIX[fmt]}"
    fs.create_dir(directory)
    stats = LedgerStats() if verify else None
    batches = read_partition(task_client(service_uri), partition, ledger_length)
    schema = BACKUP_ARROW_SCHEMA if ledger_length else ARROW_SCHEMA
    with fs.open_output_stream(f"{directory}/{name}") as stream:
        hashing = HashingStream(stream)
        rows, size = write_file(hashing, fmt, batches, stats, schema)
    return {
        "file": f"{directory}/{name}",
        "name": name,
        "rows": rows,
        "bytes": size,
        "fileBytes": hashing.size,
        "sha256": hashing.sha256,
        "ranges": [(r.ledger.ledger_id, r.first, r.last) for r in partition.ranges if r.last >= r.first],
        "stats": stats,
    }


def _stats_task(path: str, fmt: str, name: str) -> LedgerStats:
    """In a Spark task: the per-ledger figures of one written file."""
    fs, root = filesystem(path)
    stats = LedgerStats()
    for batch in read_file(fs, f"{root}/{name}", fmt):
        stats.add(batch)
    return stats


def _commit(path: str, results: list[dict], overwrite: bool) -> None:
    fs, root = filesystem(path)
    if overwrite:  # only now, with the new files ready: a failed export keeps the earlier one
        for info in fs.get_file_info(FileSelector(root)):
            if info.base_name != "_temporary":
                (fs.delete_dir if info.type == FileType.Directory else fs.delete_file)(info.path)
    for result in results:
        fs.move(result["file"], f"{root}/{result['name']}")
    fs.delete_dir(f"{root}/_temporary")
    with fs.open_output_stream(f"{root}/_SUCCESS"):
        pass


def run_export(
    spark,
    service_uri: str,
    plan: ExportPlan,
    path: str,
    fmt: str = "parquet",
    overwrite: bool = False,
    verify: bool = False,
    progress: Callable[[int, int], None] | None = None,
    ledger_length: bool = False,
) -> ExportReport:
    """Write the plan's ledgers to ``path``; ``progress(completed, total)`` gets the write's task counts.
    ``seconds`` is the write job's time, commit included. ``ledger_length``: the backup's schema (a column
    ``ledgerLength``, parquet only)."""
    sc = spark.sparkContext
    job = uuid.uuid4().hex[:12]
    group = f"bkctl-export-{job}"
    sc.setJobGroup(group, f"export {len(plan.ledgers)} ledgers to {path}")
    partitions = plan.partitions or [Partition(0, ())]  # an export of nothing still has the schema in a file
    fs, root = filesystem(path)
    fs.create_dir(root)
    with _spark_errors():
        started = time.perf_counter()
        try:
            with TaskProgress(spark, group, progress) if progress else contextlib.nullcontext():
                results = (
                    sc.parallelize(partitions, len(partitions))
                    .map(lambda part: _write_task(service_uri, path, job, fmt, verify, part, ledger_length))
                    .collect()
                )
        except BaseException:
            with contextlib.suppress(OSError):  # the attempts' files; what was at ``path`` before stays
                fs.delete_dir(f"{root}/_temporary/{job}")
                if not fs.get_file_info(FileSelector(f"{root}/_temporary")):
                    fs.delete_dir(f"{root}/_temporary")
            raise
        _commit(path, results, overwrite)
        seconds = time.perf_counter() - started
        report = ExportReport(path, fmt, len(plan.ledgers), plan.entries, plan.bytes, len(results), seconds)
        report.outputs = [{k: r[k] for k in ("name", "rows", "fileBytes", "sha256", "ranges")} for r in results]
        if verify:
            read = LedgerStats()
            for result in results:
                read.merge(result["stats"])
            names = [result["name"] for result in results]
            written = LedgerStats()
            for stats in sc.parallelize(names, len(names)).map(lambda name: _stats_task(path, fmt, name)).collect():
                written.merge(stats)
            report.read = read
            report.problems = verify_output(plan, read, written)
            report.verified = not report.problems
    return report


def verify_output(plan: ExportPlan, read: LedgerStats, written: LedgerStats) -> list[str]:
    """What is wrong with the files (``written``) against the plan and what was read (nothing: an empty list)."""
    found = dict(written.ledgers)
    problems = []
    for ledger in plan.ledgers:
        entries, size, first, last, _ = found.pop(ledger.ledger_id, (0, 0, 0, -1, 0))
        if entries != ledger.entries:
            problems.append(f"ledger {ledger.ledger_id}: {entries} entries written, expected {ledger.entries}")
        elif entries and (first, last) != (0, ledger.last_entry_id):
            problems.append(
                f"ledger {ledger.ledger_id}: entries {first}..{last} written, expected 0..{ledger.last_entry_id}"
            )
        elif size != ledger.length:
            problems.append(
                f"ledger {ledger.ledger_id}: {size} payload bytes written, its metadata says {ledger.length}"
            )
    problems += [f"ledger {lid}: in the files but not in the export" for lid in sorted(found)]
    if read.checksum != written.checksum:
        problems.append(
            f"payload checksum of the files ({written.checksum:#x}) differs from that of the entries "
            f"read ({read.checksum:#x})"
        )
    return problems
