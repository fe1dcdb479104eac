"""JSON as Apache BookKeeper's HTTP admin API writes it: ``JsonUtil.toJson``, Jackson's ``ObjectMapper`` with its
default pretty printer, and ``HashMap`` iteration order for the maps it builds. So that our bookies' bodies are the
same bytes as a Java bookie's, not only the same JSON (scripts and tests diff them).

    {                                    an object: a newline and two spaces per level before each field,
      "readOnly" : false,                " : " between name and value,
      "ids" : [ 1, 2 ],                  an array on one line, "[ ]" when empty ("{ }" for an empty object)
      "nested" : {
        "x" : "y"
      }
    }

Strings escape ``"``, ``\\`` and the control characters only (``\\n``, ``\\t``, ... or ``\\u001F``, upper-case hex);
everything else, non-ASCII included, is written as it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

_V = TypeVar("_V")

_ESCAPES = {i: f"\\u{i:04X}" for i in range(0x20)} | {
    ord("\b"): "\\b",
    ord("\t"): "\\t",
    ord("\n"): "\\n",
    ord("\f"): "\\f",
    ord("\r"): "\\r",
    ord('"'): '\\"',
    ord("\\"): "\\\\",
}


def pretty(value: object) -> str:
    """``value`` (dicts in their order, lists, str, bool, int, None) as Jackson's default pretty printer writes it."""
    return _write(value, 0)


def _write(value: object, level: int) -> str:
    if isinstance(value, dict):
        if not value:
            return "{ }"
        indent = "\n" + "  " * (level + 1)
        fields = ",".join(f"{indent}{_string(str(k))} : {_write(v, level + 1)}" for k, v in value.items())
        return "{" + fields + "\n" + "  " * level + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(_write(v, level) for v in value) + " ]"
    if isinstance(value, str):
        return _string(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    raise TypeError(f"{type(value).__name__} is not written (floats: Java's Double.toString differs from repr)")


def _string(text: str) -> str:
    return '"' + text.translate(_ESCAPES) + '"'


def java_string_hash(text: str) -> int:
    """``String.hashCode()``: a signed 32-bit int over the UTF-16 code units."""
    units = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def hash_map(items: Iterable[tuple[str, _V]]) -> dict[str, _V]:
    """The pairs in the order a ``java.util.HashMap<String, ?>`` filled with them iterates: by bucket of the final
    table (16 slots, doubled while more than 3/4 full), then by insertion. (Buckets of 8+ keys become trees in
    Java; our maps never have such collisions.)"""
    pairs = list(items)
    capacity = 16
    while len(pairs) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)  # HashMap.hash: h ^ (h >>> 16)

    order = sorted(range(len(pairs)), key=lambda i: (bucket(pairs[i][0]), i))
    return {pairs[i][0]: pairs[i][1] for i in order}
