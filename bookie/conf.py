"""``bk_server.conf``-style configuration: a Java properties file with BookKeeper's key names (BookKeeper:
conf/AbstractConfiguration.java)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from bookie.errors import InvalidArgument

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SEPARATOR = re.compile(r"(?<!\\)(?:\s*[=:]\s*|\s+)")


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


def parse_properties(text: str, where: str = "properties") -> dict[str, str]:
    """Parse Java properties text: ``key=value``, ``key: value`` or ``key value``; ``#``/``!`` comments;
    a trailing backslash continues a line."""
    props: dict[str, str] = {}
    logical = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            logical += line[:-1]
            continue
        logical += line
        match = _SEPARATOR.search(logical)
        key, value = (logical[: match.start()], logical[match.end() :]) if match else (logical, "")
        if not key:
            raise InvalidArgument(f"{where}:{number}: a value without a key")
        props[_unescape(key)] = _unescape(value.rstrip())
        logical = ""
    return props


def load_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a properties file, with a clear error when it is missing or not text."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidArgument(f"configuration file {path} does not exist") from None
    except (UnicodeDecodeError, IsADirectoryError, PermissionError) as exc:
        raise InvalidArgument(f"configuration file {path} cannot be read: {exc}") from None
    return parse_properties(text, str(path))


def metadata_service_uri(props: dict[str, str], where: str = "configuration") -> str | None:
    """``metadataServiceUri``, or BookKeeper's older ``zkServers`` + ``zkLedgersRootPath`` pair."""
    if props.get("metadataServiceUri"):
        return props["metadataServiceUri"]
    if props.get("zkServers"):
        root = props.get("zkLedgersRootPath", "/ledgers")
        if not root.startswith("/"):
            # glued to the hosts it would read as a port ("bad port '2181ledgers'"): name the key instead
            raise InvalidArgument(f"{where}: zkLedgersRootPath={root!r} must be an absolute path, e.g. /{root}")
        return f"zk+hierarchical://{props['zkServers'].replace(',', ';')}{root}"
    return None


def read_secret_file(path: str | os.PathLike[str], what: str) -> bytes:
    """The contents of a file that holds a secret (a password, a key, ZooKeeper credentials), refused when anyone but
    its owner may read it — as ssh refuses a private key — so that a secret is never kept where others read it
    unnoticed. ``what`` names the file's role in the message, e.g. ``"ZooKeeper digest credentials file"``."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise InvalidArgument(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise InvalidArgument(f"{what} {path} cannot be read: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode  # of the file opened, not of whatever the path names a moment later
        if not stat.S_ISREG(mode):
            raise InvalidArgument(f"{what} {path} is not a regular file")
        if mode & 0o077:
            raise InvalidArgument(
                f"{what} {path} is accessible by group or others (mode {stat.S_IMODE(mode):04o}): chmod 600 {path}"
            )
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)
