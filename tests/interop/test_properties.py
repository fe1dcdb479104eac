"""Our properties reader against java.util.Properties: one file of the tricky cases, read by both."""

import subprocess
from pathlib import Path

import pytest

from bookie.conf import parse_properties

from interop.oracle import java

# Every rule of java.util.Properties.load; no value ends in unescaped whitespace (Java keeps it, BookKeeper's Commons
# Configuration and we trim it) and no line is a value without a key (we refuse it).
TRICKY = (
    "# a comment\n"
    "   ! an indented comment \\\n"
    "after.comment=a comment's backslash continues nothing\n"
    "a\\\\=b\n"
    "\\u0041\\u00e9=\\u20ac and \\u00FF\n"
    "key\\:with\\:colons = v\n"
    "key\\ with\\ spaces value with spaces\n"
    "key\\=eq:v=w\n"
    "  indented : value\n"
    "sep   =   spaced\n"
    "onlyspace   value\n"
    "colon:value\n"
    "eqeq==x\n"
    "ws = = x\n"
    "colon.then.eq := y\n"
    "continued = one, \\\n"
    "      two, \\\n"
    "  three\n"
    "even=ends\\\\\\\\\n"
    "hash=a\\\n"
    "#not a comment\n"
    "tab\tvalue\n"
    "ff\fvalue\n"
    "vt\vvalue\n"
    'esc=\\t\\n\\r\\f\\q\\"\n'
    "escaped.end=trailing\\ \n"
    "empty=\n"
    "bare\n"
    "crlf=1\r\n"
    "cr=2\r"
    "blank=x\\\n"
    "\n"
    "after.blank=y\n"
    "dup=first\n"
    "dup=second\n"
    "ünï=cödé\n"
    "last=end\\"
)


def java_reads(path: Path) -> dict[str, str]:
    source = Path(__file__).with_name("java") / "PropertiesDump.java"
    done = subprocess.run([java(), str(source), str(path)], capture_output=True, text=True, timeout=120, check=True)
    pairs = (line.split("\t") for line in done.stdout.splitlines())
    return {bytes.fromhex(k).decode(): bytes.fromhex(v).decode() for k, v in pairs}


@pytest.mark.skipif(java() is None, reason="no java: set BK_ORACLE_JAVA or JAVA_HOME, or put java on PATH")
def test_we_read_a_properties_file_as_java_does(tmp_path):
    path = tmp_path / "tricky.properties"
    path.write_bytes(TRICKY.encode())
    theirs = java_reads(path)
    assert theirs["a\\"] == "b" and theirs["Aé"] == "€ and ÿ"  # the file says what it means to
    assert parse_properties(TRICKY) == theirs
