"""A Spark session for an export, and the progress of its tasks.

The JVM that PySpark starts inherits our stdout and stderr, and everything Spark prints (log4j, the console
progress bar, the Python daemon's tracebacks at shutdown) would land there. So it is started with both pointed at
a log file: stdout stays data only, stderr stays our one-line diagnostics. The code that starts the session also
stops it, JVM included.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Self

from bookie.errors import BKError, reworded
from bookie.files import append_private

DEFAULTS = {"spark.ui.showConsoleProgress": "false"}
GATEWAY_ATTEMPTS = 3
LOCAL_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


class SparkFailed(BKError):
    """Spark failed on its own (did not start, or a job failed without an error of ours): its log says why."""


@contextlib.contextmanager
def spark_log(prefix: str) -> Iterator[Path]:
    """A ``spark.log`` path in a private temporary directory, removed when the block ends; unless Spark failed on
    its own: then the log is kept and the error raised again naming it."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    log, keep = work / "spark.log", False
    try:
        yield log
    except SparkFailed as exc:
        if not log.exists():
            raise
        keep = True
        raise reworded(exc, f"{exc} (Spark's log: {log})") from None
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def _output_to(log_path: Path) -> Iterator[None]:
    """Point file descriptors 1 and 2 at ``log_path`` while child processes are started (they inherit them)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        with append_private(log_path) as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


def _jvm_reason(log_path: Path) -> str | None:
    """Why the JVM would not start, when its log says (a bad master, a bad setting)."""
    lines = log_path.read_text(errors="replace").splitlines() if log_path.exists() else []
    for line in lines:
        if line.startswith('Exception in thread "main"') and ": " in line:
            return line.split(": ", 1)[1]
    return next((line for line in lines if line.startswith(("Error:", "Invalid "))), None)


def _why_not_started(log_path: Path, exc: Exception) -> str:
    """The JVM's own reason, else PySpark's."""
    return _jvm_reason(log_path) or next(
        (line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__
    )


def _ensure_java() -> None:
    """PySpark finds Java through JAVA_HOME or PATH; fill in JAVA_HOME from the runtime ZooKeeper uses otherwise."""
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return
    from bookie.local.java import find_java

    os.environ["JAVA_HOME"] = str(Path(find_java()).resolve().parent.parent)


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


@contextlib.contextmanager
def spark_session(master: str | None, conf: dict[str, str], log_path: Path, app_name: str = "bkctl export"):
    """A Spark session for the ``with`` block, started quietly and stopped at its end (JVM included).

    A session already active in this process (a notebook's, a test's) is used as it is and left running;
    ``master`` and ``conf`` then do not apply. Under spark-submit, ``master`` None means spark-submit's; otherwise
    it means ``local[*]``.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:  # not run by spark-submit
        master = "local[*]"
    _ensure_java()
    if master and is_local(master):
        # Tasks' Python must import this package: on one machine, the interpreter running us. (On a cluster it
        # is the executors' own, spark.pyspark.python, with bkctl installed.) Spark's Python workers take it
        # from the JVM's environment.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    settings = {**DEFAULTS, **(LOCAL_DEFAULTS if master and is_local(master) else {}), **conf}
    if master:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    for attempt in range(GATEWAY_ATTEMPTS):
        try:
            with _output_to(log_path):
                session = builder.getOrCreate()
            break
        except Exception as exc:  # noqa: BLE001 - PySpark and py4j errors of a JVM that did not come up
            # A launcher that died before it said anything is worth another try; a JVM that said why is not.
            if "JAVA_GATEWAY_EXITED" not in str(exc) or attempt + 1 == GATEWAY_ATTEMPTS or _jvm_reason(log_path):
                raise SparkFailed(f"Spark did not start: {_why_not_started(log_path, exc)}") from None
    gateway = SparkContext._gateway
    try:
        session.sparkContext.setLogLevel("WARN")
        yield session
    finally:
        session.stop()
        proc = getattr(gateway, "proc", None)
        if gateway is not None and proc is not None:  # we launched this JVM: end it too (it exits on stdin's end)
            gateway.shutdown()
            proc.stdin.close()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            SparkContext._gateway = SparkContext._jvm = None


class TaskProgress:
    """Polls Spark's status tracker for the tasks of one job group and reports ``(completed, total)`` tasks."""

    def __init__(self, spark, group: str, report: Callable[[int, int], None], interval: float = 0.5):
        self.tracker = spark.sparkContext.statusTracker()
        self.group, self.report, self.interval = group, report, interval
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="export-progress", daemon=True)

    def _poll(self) -> None:
        done = total = 0
        for job_id in self.tracker.getJobIdsForGroup(self.group):
            job = self.tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job else ():
                stage = self.tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    total += stage.numTasks
        if total:
            self.report(done, total)

    def _run(self) -> None:
        while not self._stopped.wait(self.interval):
            with contextlib.suppress(Exception):  # the context may be stopping under us
                self._poll()

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stopped.set()
        self._thread.join(5)
        if exc[0] is None:
            self._poll()  # the final count: a job shorter than one interval is reported too
