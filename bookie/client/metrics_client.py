"""A bookie's ``/metrics``: Prometheus' text format as BookKeeper's Prometheus provider writes it (and ours,
bookie/server/prometheus.py): ``name{label="value",...} value`` lines, ``# TYPE name kind`` before each family.

BookKeeper's writer has quirks a strict parser refuses: a space after the comma before scope labels
(``{success="true",quantile="0.5", journalIndex="0"}``), a trailing comma in older versions, ``Infinity``; these are
read as what they mean.
"""

from __future__ import annotations

import re
import urllib.error
from dataclasses import dataclass

from bookie.client.http_request import Unreachable, read_body
from bookie.errors import BKError, ServiceUnavailable

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, name: str) -> str | None:
        return dict(self.labels).get(name)


class Metrics:
    """One scrape: the samples, and the type of each family (``counter``, ``gauge``, ``summary``...)."""

    def __init__(self, samples: list[Sample], types: dict[str, str]):
        self.samples = samples
        self.types = types

    def find(self, name: str, **labels: str) -> list[Sample]:
        """The samples of ``name`` whose labels include ``labels``."""
        wanted = set(labels.items())
        return [s for s in self.samples if s.name == name and wanted <= set(s.labels)]

    def sum(self, name: str, **labels: str) -> float | None:
        """The sum of those samples (over the labels not named, e.g. both outcomes), None when there are none."""
        found = self.find(name, **labels)
        return sum(s.value for s in found) if found else None

    def matching(self, pattern: str) -> list[Sample]:
        """The samples whose name matches the regular expression ``pattern`` in full."""
        compiled = re.compile(pattern)
        return [s for s in self.samples if compiled.fullmatch(s.name)]


def _unescape(value: str) -> str:
    return re.sub(r"\\[\\\"n]", lambda m: _ESCAPES[m.group(0)], value)


def parse(text: str) -> Metrics:
    """Parse Prometheus text; lines that are not samples or TYPE comments are skipped."""
    samples, types = [], {}
    for line in text.splitlines():
        if line.startswith("#"):
            parts = line.split()
            if len(parts) >= 4 and parts[1] == "TYPE":
                types[parts[2]] = parts[3]
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        name, labels, value = match.groups()
        try:
            number = float(value)
        except ValueError:
            continue
        pairs = tuple((k, _unescape(v)) for k, v in _LABEL.findall(labels or ""))
        samples.append(Sample(name, pairs, number))
    return Metrics(samples, types)


def scrape(bookie_id: str, url: str, timeout: float = 10.0) -> Metrics:
    """GET ``url`` (a bookie's /metrics) and parse it; a bookie that does not answer is ServiceUnavailable."""
    try:
        text = read_body(url, timeout).decode("utf-8", errors="replace")
    except urllib.error.HTTPError as error:
        raise BKError(f"metrics of bookie {bookie_id}: HTTP {error.code} from {url}") from None
    except TimeoutError:
        raise ServiceUnavailable(f"metrics of bookie {bookie_id}: no answer from {url} in {timeout:g} s") from None
    except Unreachable as exc:
        raise ServiceUnavailable(f"metrics of bookie {bookie_id} are unreachable at {url} ({exc})") from None
    return parse(text)
