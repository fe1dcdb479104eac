"""bkctl top's view, drawn from a canned sample into a recording console (what a terminal would show), and its
refusals without a terminal."""

from __future__ import annotations

import io

from rich.console import Console

from admin.top import BookieRow, flag_slow
from bkctl.top_view import HEADERS, render


def sample() -> list[BookieRow]:
    def bookie(name, adds, add_p99, **more):
        return BookieRow(
            name,
            "writable",
            adds_per_sec=adds,
            reads_per_sec=12.5,
            add_p50_ms=1.5,
            add_p99_ms=add_p99,
            read_p50_ms=0.4,
            read_p99_ms=2.0,
            fsync_p99_ms=3.25,
            in_flight=4,
            errors_per_sec=2.5,
            rejected_per_sec=0.5,
            disk_used_percent=41.5,
            disk_free_bytes=3 * 2**30,
            gc="idle",
            **more,
        )

    rows = [
        bookie("b1:3181", 900.0, 4.0),
        bookie("b2:3181", 1500.0, 5.0),
        bookie("b3:3181", 300.0, 250.0),
        BookieRow("b4:3181", "readonly", error="metrics of bookie b4:3181 are unreachable"),
    ]
    flag_slow(rows)
    return rows


def draw(*args, **kwargs) -> list[str]:
    console = Console(file=io.StringIO(), width=200, record=True, color_system=None)
    console.print(render(*args, **kwargs))
    return console.export_text().splitlines()


def test_the_view_has_every_column_the_slow_bookie_flagged_and_the_keys():
    lines = draw(sample(), "a")
    header = lines[0]
    positions = [header.index(h) for h in HEADERS]
    assert positions == sorted(positions)  # every column, in order
    assert [line.split()[0] for line in lines[1:5]] == ["b2:3181", "b1:3181", "b3:3181", "b4:3181"]  # adds/s first
    assert lines[1].split() == [
        "b2:3181", "rw", "1500", "12", "1.5ms", "5.0ms", "0.4ms", "2.0ms", "3.2ms", "4", "2.5", "0.5", "42%", "3.0",
        "GiB", "idle", "<none>",
    ]  # fmt: skip
    assert lines[3].split()[-1] == "SLOW" and lines[4].split()[1:3] == ["ro", "<none>"]
    assert lines[4].split()[-1] == "unreachable"
    assert "SLOW b3:3181: add p99 250 ms is 56x the others' median 4.5 ms" in lines
    assert "b4:3181: metrics of bookie b4:3181 are unreachable" in lines
    assert lines[-2] == (
        "sort by: n name  a adds/s  r reads/s  l add p99  L read p99  f fsync p99  i in flight  d disk used (again: "
        "reverse)   q quit"
    )
    assert lines[-1] == "sorted by adds/s, every 2 s; SLOW: p99 at least 3x the others' median and 10 ms"


def test_a_key_pressed_again_reverses_and_a_bookie_without_the_value_stays_last():
    lines = draw(sample(), "l", reverse=True)
    assert [line.split()[0] for line in lines[1:5]] == ["b1:3181", "b2:3181", "b3:3181", "b4:3181"]
    assert "sorted by add p99 reversed" in lines[-1]


def test_without_a_terminal_top_asks_for_once(bkctl):
    result = bkctl("-u", "zk+hierarchical://127.0.0.1:1/ledgers", "top")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == "error: bkctl top draws a live view on a terminal: pass --once for one sample\n"
    result = bkctl("-u", "zk+hierarchical://127.0.0.1:1/ledgers", "top", "-o", "json")
    assert (result.exit_code, result.stderr) == (2, "error: -o json prints one sample: pass --once\n")
