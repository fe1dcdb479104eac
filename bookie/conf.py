"""``bk_server.conf``-style configuration: a Java properties file with BookKeeper's key names (BookKeeper:
conf/AbstractConfiguration.java)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from bookie.errors import InvalidArgument

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_WHITESPACE = " \t\f"  # Java's: not \v nor the Unicode spaces
_LINES = re.compile(r"\r\n|\r|\n")
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|u|.|$)", re.S)


def _unescape(text: str, where: str) -> str:
    r"""java.util.Properties' loadConvert: ``\t \n \r \f``, ``\uXXXX``, and a backslash before any other character
    stands for that character (``\=``, ``\:``, ``\ ``, ``\\``); a backslash at the end is dropped."""

    def one(match: re.Match) -> str:
        escaped = match.group(1)
        if escaped.startswith("u"):
            if len(escaped) != 5:
                raise InvalidArgument(f"{where}: malformed \\uXXXX escape")
            return chr(int(escaped[1:], 16))
        return _ESCAPES.get(escaped, escaped)

    return _ESCAPE.sub(one, text)


def _split(line: str) -> tuple[str, str]:
    """A logical line's key and value, as java.util.Properties cuts them: the key ends at the first ``=``, ``:`` or
    whitespace not escaped by a backslash; whitespace, one ``=`` or ``:``, and whitespace again come before the
    value."""
    escaped = False
    end = len(line)
    for i, c in enumerate(line):
        if not escaped and (c in "=:" or c in _WHITESPACE):
            end = i
            break
        escaped = c == "\\" and not escaped
    value = end
    separator = False
    while value < len(line):
        c = line[value]
        if c not in _WHITESPACE:
            if separator or c not in "=:":
                break
            separator = True
        value += 1
    return line[:end], line[value:]


def parse_properties(text: str, where: str = "properties") -> dict[str, str]:
    r"""Parse Java properties text by java.util.Properties' rules: ``key=value``, ``key: value`` or ``key value``;
    ``#``/``!`` comment lines; a line ending in an odd number of backslashes goes on, after the leading whitespace,
    on the next; escapes in keys and values (``\=``, ``\:``, ``\ ``, ``\\``, ``\t``, ``\uXXXX``).

    Two differences, both as BookKeeper's own reader (Apache Commons Configuration) has them: whitespace at the end
    of a value is trimmed (an escaped ``\ `` stays), and a value with no key is refused."""
    props: dict[str, str] = {}
    logical = ""
    continued = False
    # a last empty line ends a line the file's last backslash continued, as the end of the file does in Java
    for number, raw in enumerate([*_LINES.split(text), ""], 1):
        line = raw.lstrip(_WHITESPACE)
        if not continued and (not line or line[0] in "#!"):
            continue
        continued = (len(line) - len(line.rstrip("\\"))) % 2 == 1
        if continued:
            logical += line[:-1]
            continue
        key, value = _split(logical + line)
        logical = ""
        if not key:
            raise InvalidArgument(f"{where}:{number}: a value without a key")
        props[_unescape(key, f"{where}:{number}")] = _unescape(_trim_end(value), f"{where}:{number}")
    return props


def _trim_end(value: str) -> str:
    r"""``value`` less its whitespace at the end, except a space or tab escaped by a backslash."""
    trimmed = value.rstrip(_WHITESPACE)
    if len(trimmed) < len(value):
        backslashes = len(trimmed) - len(trimmed.rstrip("\\"))
        if backslashes % 2:
            trimmed = value[: len(trimmed) + 1]
    return trimmed


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
