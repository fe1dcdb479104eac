"""BookKeeper's stats API (``StatsLogger``: scopes, labels, counters, gauges, OpStatsLoggers) and the text its
Prometheus provider writes at /metrics, in Python: the names, types, labels and number formats of
``PrometheusMetricsProvider.writeAllMetrics`` / ``PrometheusTextFormat`` of Apache BookKeeper 4.17.4, so that
dashboards and alerts written for Java bookies read ours unchanged.

What BookKeeper's provider writes::

    # TYPE bookie_SERVER_STATUS gauge                        gauges first: getSample().toString()
    bookie_SERVER_STATUS 1
    # TYPE bookie_journal_JOURNAL_QUEUE_SIZE counter         then counters (a Long, no _total suffix)
    bookie_journal_JOURNAL_QUEUE_SIZE{journalIndex="0"} 0
    # TYPE bookkeeper_server_ADD_ENTRY_REQUEST summary       then OpStatsLoggers: failures, then successes
    bookkeeper_server_ADD_ENTRY_REQUEST{success="false",quantile="0.5"} NaN
    ...                                                       quantiles 0.5 0.75 0.95 0.99 0.999 0.9999 1.0
    bookkeeper_server_ADD_ENTRY_REQUEST_count{success="false"} 0
    bookkeeper_server_ADD_ENTRY_REQUEST_sum{success="false"} 0.0
    bookie_journal_JOURNAL_SYNC{success="true",quantile="0.5", journalIndex="0"} 1.706

Scopes are joined with ``_`` (``PrometheusStatsLogger.completeName``) and sanitized as the Prometheus client does;
``scopeLabel`` adds a label instead of a scope. An OpStatsLogger is a summary of milliseconds (or of values, e.g.
bytes): ``_count`` and ``_sum`` since start (the sum adds each event's whole milliseconds, as Java's ``(long)`` cast
does), and quantiles of the last completed window of ``prometheusStatsLatencyRolloverSeconds`` (NaN before the first
window closes).

Where ours differs, and why: the quantiles come from log-scale buckets of 1% relative accuracy (BookKeeper uses
DataSketches' quantiles sketch, of similar rank accuracy), because a bucket increment is what Python can afford on
the add path; and one call records ``n`` events of the same value, so that the adds and reads that a pass over a
connection's frames answers together cost one update, not one per entry.
"""

from __future__ import annotations

import decimal
import logging
import math
import re
import struct
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger(__name__)

QUANTILES = (0.5, 0.75, 0.95, 0.99, 0.999, 0.9999, 1.0)  # PrometheusTextFormat.writeOpStat
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # TextFormat.CONTENT_TYPE_004
ACCURACY = 0.01  # relative error of a quantile
_GAMMA = (1 + ACCURACY) / (1 - ACCURACY)
_PER_LOG = 1 / math.log(_GAMMA)
_NOT_IN_NAME = re.compile(r"[^a-zA-Z0-9:_]")
_FLOAT32 = struct.Struct("f")


# ---- Java's number formats ----
def java_double(value: float) -> str:
    """``Double.toString``: decimal for 1e-3 <= |x| < 1e7 (``1265.0``), else ``1.2345678E7``, ``NaN``."""
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        return repr(float(value))  # Python's repr is decimal in this range, shortest digits as Java's
    return _scientific(repr(float(value)))


def java_float(value: float) -> str:
    """``Float.toString`` of ``value`` rounded to a float32: its shortest digits (``42.35678``, ``1.0E-4``)."""
    single = _FLOAT32.unpack(_FLOAT32.pack(value))[0]
    if single != single or math.isinf(single) or single == 0:
        return java_double(single)
    text = next(
        t for t in (f"{single:.{d}g}" for d in range(1, 10)) if _FLOAT32.unpack(_FLOAT32.pack(float(t)))[0] == single
    )
    return repr(float(text)) if 1e-3 <= abs(single) < 1e7 else _scientific(text)


def _scientific(shortest: str) -> str:
    sign, digits, exponent = decimal.Decimal(shortest).normalize().as_tuple()
    assert isinstance(exponent, int)  # a finite number's ('n', 'N', 'F' are NaN's and infinity's)
    text = "".join(map(str, digits))
    mantissa = text[0] + "." + (text[1:] or "0")
    return ("-" if sign else "") + f"{mantissa}E{exponent + len(text) - 1}"


def metric_name(name: str) -> str:
    """``Collector.sanitizeMetricName``: what is not a letter, digit or ':' (or a leading digit) becomes '_'."""
    name = _NOT_IN_NAME.sub("_", name)
    return "_" + name[1:] if name[:1].isdigit() else name


# ---- the three kinds of metric ----
class Counter:
    """``LongAdderCounter``, or a counter read from ``source`` at scrape time (what the bookie counts anyway)."""

    __slots__ = ("labels", "source", "value")

    def __init__(self, labels: dict[str, str], source: Callable[[], int] | None = None):
        self.labels, self.value, self.source = labels, 0, source

    def inc(self, n: int = 1) -> None:
        self.value += n

    def get(self) -> int:
        return int(self.source()) if self.source is not None else self.value


class Gauge:
    """``SimpleGauge``: ``sample()`` at scrape time. ``float32``: a ``Gauge<Float>`` (Float.toString)."""

    __slots__ = ("float32", "labels", "sample")

    def __init__(self, labels: dict[str, str], sample: Callable[[], float], float32: bool = False):
        self.labels, self.sample, self.float32 = labels, sample, float32

    def text(self) -> str:
        value = self.sample()
        if self.float32:
            return java_float(value)
        return str(value) if isinstance(value, int) else java_double(value)


class _Window:
    """Events of one rollover window in log-scale buckets: bucket ``i`` holds values in (gamma^(i-1), gamma^i]."""

    __slots__ = ("buckets", "count", "high", "low", "zeros")

    def __init__(self) -> None:
        self.buckets: dict[int, int] = {}
        self.zeros = self.count = 0
        self.low, self.high = math.inf, -math.inf

    def add(self, value: float, n: int) -> None:
        if value > 0:
            i = math.ceil(math.log(value) * _PER_LOG)
            buckets = self.buckets
            buckets[i] = buckets.get(i, 0) + n
        else:
            self.zeros += n
        self.count += n
        if value < self.low:
            self.low = value
        if value > self.high:
            self.high = value

    def quantile(self, q: float) -> float:
        """The smallest value with at least ``q`` of the events at or below it (1.0: the largest)."""
        if not self.count:
            return math.nan
        if q >= 1.0:
            return self.high
        target, seen = q * self.count, self.zeros
        if seen >= target:
            return max(0.0, self.low)
        for i, n in sorted(self.buckets.items()):
            seen += n
            if seen >= target:
                return min(max(2 * _GAMMA**i / (_GAMMA + 1), self.low), self.high)
        return self.high


class OpStats:
    """``DataSketchesOpStatsLogger``: successes and failures apart, in milliseconds (or values)."""

    __slots__ = ("_published", "_window", "count", "labels", "sum", "whole")

    def __init__(self, labels: dict[str, str]):
        self.labels = labels
        self.count = [0, 0]  # [failed, succeeded], as success=false is written first
        self.sum = [0, 0]
        self.whole = False  # values (Java longs: whole quantiles), not milliseconds (to the microsecond)
        self._window = (_Window(), _Window())
        self._published: tuple[_Window | None, _Window | None] = (None, None)

    def event(self, seconds: float, success: bool = True, n: int = 1) -> None:
        """``n`` events that took ``seconds`` each (registerSuccessfulEvent / registerFailedEvent)."""
        millis = int(seconds * 1_000_000) / 1000.0  # Java: unit.toMicros(latency) / 1000.0
        i = 1 if success else 0
        self.count[i] += n
        self.sum[i] += int(millis) * n
        self._window[i].add(millis, n)

    def values(self, total: int, n: int, success: bool = True) -> None:
        """``n`` values adding up to ``total`` (registerSuccessfulValue of each): counted and summed exactly; their
        mean goes into the quantiles."""
        if n <= 0:
            return
        self.whole = True
        i = 1 if success else 0
        self.count[i] += n
        self.sum[i] += total
        self._window[i].add(total / n, n)

    def rotate(self) -> None:
        """Close the window: its quantiles are the ones written until the next rotation."""
        window, self._window = self._window, (_Window(), _Window())
        self._published = window

    def quantile(self, success: bool, q: float) -> float:
        """From the last closed window; a bucket's value to the resolution of what it holds."""
        window = self._published[1 if success else 0]
        value = window.quantile(q) if window is not None else math.nan
        return value if value != value else float(round(value)) if self.whole else round(value, 3)


# ---- StatsLogger and the provider ----
def _label_text(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


class StatsLogger:
    """``PrometheusStatsLogger``: a scope (``a_b_c``) and labels; the same name and labels give the same metric."""

    def __init__(self, provider: StatsProvider, scope: str = "", labels: dict[str, str] | None = None):
        self.provider, self._scope, self.labels = provider, scope, labels or {}

    def _name(self, name: str) -> str:
        return metric_name(f"{self._scope}_{name}" if self._scope else name)

    def scope(self, name: str) -> StatsLogger:
        return StatsLogger(self.provider, self._name(name), self.labels)

    def scope_label(self, name: str, value: str) -> StatsLogger:
        return StatsLogger(self.provider, self._scope, dict(sorted({**self.labels, name: value}.items())))

    def counter(self, name: str, source: Callable[[], int] | None = None) -> Counter:
        return self.provider.register(  # type: ignore[no-any-return]
            self.provider.counters, self._name(name), self.labels, lambda: Counter(self.labels, source)
        )

    def gauge(self, name: str, sample: Callable[[], float], float32: bool = False) -> Gauge:
        return self.provider.register(  # type: ignore[no-any-return]
            self.provider.gauges, self._name(name), self.labels, lambda: Gauge(self.labels, sample, float32)
        )

    def op_stats(self, name: str) -> OpStats:
        return self.provider.register(  # type: ignore[no-any-return]
            self.provider.op_stats, self._name(name), self.labels, lambda: OpStats(self.labels)
        )


MetricKey = tuple[str, tuple[tuple[str, str], ...]]  # a metric's name and labels


class StatsProvider:
    """The registry, its text, the quantile rollover, and the ``prometheusStatsHttpPort`` server."""

    def __init__(self) -> None:
        self.gauges: dict[MetricKey, Gauge] = {}
        self.counters: dict[MetricKey, Counter] = {}
        self.op_stats: dict[MetricKey, OpStats] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def logger(self, scope: str = "") -> StatsLogger:
        return StatsLogger(self, scope)

    def register(self, table: dict[MetricKey, Any], name: str, labels: dict[str, str], make: Callable[[], Any]) -> Any:
        """The metric ``name`` with ``labels`` of ``table``, made by ``make`` the first time."""
        key = (name, tuple(labels.items()))
        with self._lock:
            if key not in table:
                table[key] = make()
            return table[key]

    def text(self) -> str:
        """``writeAllMetrics``: gauges, counters, then OpStatsLoggers; one TYPE line per name."""
        out: list[str] = []
        typed: set[str] = set()

        def type_line(name: str, kind: str) -> None:
            if name not in typed:
                typed.add(name)
                out.append(f"# TYPE {name} {kind}\n")

        def braces(labels: dict[str, str]) -> str:
            return "{" + _label_text(labels) + "}" if labels else ""

        with self._lock:
            gauges, counters, op_stats = (
                list(self.gauges.items()),
                list(self.counters.items()),
                list(self.op_stats.items()),
            )
        for (name, _), gauge in gauges:
            type_line(name, "gauge")
            out.append(f"{name}{braces(gauge.labels)} {gauge.text()}\n")
        for (name, _), counter in counters:
            type_line(name, "counter")
            out.append(f"{name}{braces(counter.labels)} {counter.get()}\n")
        for (name, _), stats in op_stats:
            type_line(name, "summary")
            extra = ", " + _label_text(stats.labels) if stats.labels else ""
            for i, success in ((0, "false"), (1, "true")):
                for q in QUANTILES:
                    value = java_double(stats.quantile(bool(i), q))
                    out.append(f'{name}{{success="{success}",quantile="{q}"{extra}}} {value}\n')
                out.append(f'{name}_count{{success="{success}"{extra}}} {stats.count[i]}\n')
                out.append(f'{name}_sum{{success="{success}"{extra}}} {java_double(float(stats.sum[i]))}\n')
        return "".join(out)

    def rotate(self) -> None:
        with self._lock:
            op_stats = list(self.op_stats.values())
        for stats in op_stats:
            stats.rotate()

    def start_rollover(self, seconds: float) -> None:
        """Rotate the quantile windows 1 s from now, then every ``seconds`` (prometheusStatsLatencyRolloverSeconds),
        as BookKeeper's provider schedules it."""

        def loop() -> None:
            wait = 1.0
            while not self._stop.wait(wait):
                self.rotate()
                wait = seconds

        threading.Thread(target=loop, name="metrics-rollover", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def serve(self, address: str, port: int) -> ThreadingHTTPServer:
        """``/metrics`` on ``address:port`` in a thread of its own (``port`` 0: a free one), as the Prometheus
        provider's Jetty serves it when the HTTP admin server is off. The standard library's threading server is
        what prometheus_client used here before: a scrape every few seconds is all it takes. Raises OSError."""
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404)
                    return
                body = provider.text().encode()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET  # PrometheusServlet.doPost

            def log_message(self, *args: Any) -> None:
                pass  # a scrape every few seconds is not news

        server = ThreadingHTTPServer((address, port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True).start()
        return server
