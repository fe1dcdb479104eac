"""The soak's judgement of its curves (tests/faults/soak.py) and its picture, on made-up samples (matplotlib runs
fc-list: not a pure test)."""

from __future__ import annotations

from faults.soak import Sample, judge, plot


def steady(name: str, pid: int = 1, rss=100.0, fds=40, threads=12, growth=0.0, count=40) -> list[Sample]:
    return [Sample(n, name, pid, rss * (1 + growth * n / count), fds, threads) for n in range(count)]


def test_flat_curves_pass_and_growth_or_leaks_are_named():
    latency = [(float(n), 20.0) for n in range(40)]
    assert judge(steady("bookie-1") + steady("client"), latency) == []
    problems = judge(steady("bookie-1", growth=0.5) + steady("client"), latency)
    assert problems == ["bookie-1: RSS 110.0 MB -> 143.8 MB (+31%)"]
    leaking = [Sample(s.at, s.name, s.pid, s.rss_mb, s.fds + int(s.at), s.threads) for s in steady("bookie-2")]
    assert judge(leaking, latency) == ["bookie-2: fds between 44 and 79"]
    slower = [(float(n), 20.0 if n < 20 else 45.0) for n in range(40)]
    assert judge(steady("client"), slower) == ["client: p99 add latency 20.0 ms -> 45.0 ms"]


def test_a_restarted_process_is_not_judged_and_the_warm_up_is_left_out():
    restarted = steady("bookie-5", pid=1, count=20) + steady("bookie-5", pid=2, rss=300.0, count=20)
    assert judge(restarted, []) == []
    warming = [Sample(n, "client", 1, 50.0 if n < 4 else 100.0, 40, 12) for n in range(40)]
    assert judge(warming, []) == []


def test_the_picture_is_written(tmp_path):
    plot(
        steady("bookie-1") + steady("client"),
        [(float(n), 20.0) for n in range(40)],
        [(5.0, "zk-crash")],
        tmp_path / "soak.png",
    )
    assert (tmp_path / "soak.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
