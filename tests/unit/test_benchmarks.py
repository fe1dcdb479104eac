"""The benchmark scripts still run: each parses its arguments (its imports resolve), and the one that needs no
cluster runs a few frames. Their numbers are measured by hand, not asserted."""

import struct
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
# export.py imports the export's job, which needs PyArrow (the export extra): a test of the spark tier
SCRIPTS = [
    pytest.param(name, marks=pytest.mark.spark) if name == "export.py" else name
    for name in sorted(p.name for p in BENCHMARKS.glob("*.py") if p.name not in ("common.py", "wire_capture.py"))
]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=BENCHMARKS.parent)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_benchmark_parses_its_arguments(script):
    done = run(f"benchmarks/{script}", "--help")
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout


def test_wire_frames_measures_adds_and_reads():
    """It drives the bookie's protocol with stand-ins for the bookie: it broke once when the protocol began to read
    TLS and roles from the bookie's configuration."""
    done = run("benchmarks/wire_frames.py", "--frames", "4", "--rounds", "20")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()  # round N CODEC  add X us/frame  read Y us/frame, C and Python alternating
    assert [line.split()[:3] for line in lines] == [["round", n, codec] for n in "12" for codec in ("C", "Python")]
    for line in lines:
        fields = line.split()
        assert (fields[3], fields[6]) == ("add", "read") and float(fields[4]) > 0 and float(fields[7]) > 0


def test_vs_bookkeeper_plots_and_tables_a_sweep(tmp_path):
    """The latency sweep's PNG and table, from made-up points (the sweep itself runs the oracle for minutes)."""
    pytest.importorskip("matplotlib")  # the test extra's, not test-fast's
    plot = tmp_path / "sweep.png"
    code = f"""
import sys
sys.path.insert(0, "benchmarks")
import vs_bookkeeper
points = [{{"offered": rate, "rate": rate or 31000, "p50": 2.5, "p99": 9.0}} for rate in (1000, 10000, None)]
sides = {{"Java client -> Java bookies": points, "Java client -> our bookies": points}}
vs_bookkeeper.draw(sides, __import__("pathlib").Path({str(plot)!r}))
print(vs_bookkeeper.render_sweep(sides))
"""
    done = run("-c", code)
    assert done.returncode == 0, done.stderr
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = done.stdout.splitlines()
    assert "Java client -> our bookies" in rows[0]
    assert [row.split()[0] for row in rows[1:]] == ["1000", "10000", "max"]
    assert "31,000/s" in rows[3]


def _pcap(packets: list[tuple[float, int, int, int, bytes]]) -> bytes:
    """A pcap file (nanosecond timestamps, Ethernet) of IPv4 TCP ``(time, source port, destination port, sequence
    number, payload)`` packets: what tcpdump writes on lo."""
    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)]
    for when, source, destination, sequence, payload in packets:
        tcp = struct.pack(">HHIIBBHHH", source, destination, sequence, 0, 5 << 4, 0x18, 65535, 0, 0) + payload
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, bytes(4), bytes(4)) + tcp
        frame = bytes(14) + ip
        seconds = int(when)
        out.append(struct.pack("<IIII", seconds, round((when - seconds) * 1e9), len(frame), len(frame)) + frame)
    return b"".join(out)


def test_wire_capture_times_an_add_inside_each_bookie_and_until_its_ack_quorum(monkeypatch):
    """vs_bookkeeper.py --wire's reading of a capture: inside a bookie, an add request split over two packets counts
    from the second, its answer from the packet that begins it; the entry's quorum time runs from its first request
    packet to the second EOK answer (an error answer does not count); a retransmission, another port and a read are
    not adds."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from bookie._proto import bookkeeper_protocol_pb2 as pb
    from bookie.codec import wire

    import wire_capture

    add = wire.add_request_v3(5, 7, 0, b"k" * 20, b"e" * 100, recovery=False)
    add_1 = wire.add_request_v3(6, 7, 1, b"k" * 20, b"e" * 100, recovery=False)
    read = wire.read_request_v3(6, 7, 0)
    answer, fenced = wire.add_response_v3(5, pb.EOK, 7, 0), wire.add_response_v3(6, pb.EFENCED, 7, 1)
    packets = [
        (10.0, 40000, 3181, 1000, add[:50]),
        (10.0001, 40002, 3182, 500, add),
        (10.0002, 40000, 3181, 1050, add[50:]),
        (10.0003, 40000, 3181, 1000, add[:50]),  # retransmitted: skipped
        (10.0004, 40000, 3181, 1000 + len(add), read),
        (10.0005, 40002, 3182, 500 + len(add), add_1),
        (10.0006, 40000, 3181, 1000 + len(add) + len(read), add_1),
        (10.0009, 3181, 40000, 7000, answer[:10]),
        (10.0011, 3181, 40000, 7010, answer[10:]),
        (10.0012, 40001, 3999, 1, add),  # not a bookie's port
        (10.0013, 3182, 40002, 900, fenced),
        (10.0015, 3182, 40002, 900 + len(fenced), answer),
        (10.0016, 3181, 40000, 7000 + len(answer), wire.add_response_v3(6, pb.EOK, 7, 1)),
    ]
    times = wire_capture.add_times(_pcap(packets), {3181, 3182}, ack_quorum=2)
    assert sorted(times.bookies) == [3181, 3182]
    assert times.bookies[3181] == pytest.approx([0.0007, 0.001], abs=1e-6)
    assert times.bookies[3182] == pytest.approx([0.0008, 0.0014], abs=1e-6)
    assert times.quorum == pytest.approx([0.0015], abs=1e-6)  # entry 1 had one EOK answer: no quorum
    later = wire_capture.add_times(_pcap(packets), {3181, 3182}, 2, since=10.0003)  # entry 0 sent before: not counted
    assert later.bookies == {3182: pytest.approx([0.0008]), 3181: pytest.approx([0.001])} and later.quorum == []
