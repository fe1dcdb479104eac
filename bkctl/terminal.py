"""The one object that owns all output: data to stdout, diagnostics to stderr, gated by verbosity.

Formats: ``table`` (kubectl-style columns, name first, ``<none>`` for missing values), ``wide`` (more columns),
``json`` and ``yaml``. Long lists stream: rows are printed as they come, JSON arrays are written element by element.
With json or yaml, stdout holds one document (or nothing): sentences for people go through ``table`` renderers only.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from bookie.progress import Progress

NONE = "<none>"
GAP = "   "
WIDTH_SAMPLE = 200  # rows looked at to size the columns of a streamed table


def stderr_is_terminal() -> bool:
    """Whether progress is shown: only on a terminal, never into a pipe or a file (tests replace this)."""
    return sys.stderr.isatty()


def format_bytes(n: int) -> str:
    """A byte count for people, the one formatter of the CLI: ``1.8 TiB``, ``101.0 MiB``, ``3.2 KiB``, ``12 B``."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def iso_time(millis: int | None) -> str | None:
    """Milliseconds since the epoch as ISO-8601 in UTC, ``2026-11-25T12:00:00.000Z``; None when there is no time
    (None, or 0: BookKeeper's "never", e.g. a compaction that has not run)."""
    import datetime

    if not millis or millis < 0:
        return None
    moment = datetime.datetime.fromtimestamp(millis / 1000, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


def with_iso_times(doc: dict[str, Any], *fields: str) -> dict[str, Any]:
    """``doc`` with ``<field>Iso`` (:func:`iso_time`) right after each epoch-milliseconds ``field`` it has: the one
    rule for times in json/yaml output. The raw field stays, for the scripts that read it."""
    out: dict[str, Any] = {}
    for key, value in doc.items():
        out[key] = value
        if key in fields:
            out[f"{key}Iso"] = iso_time(value)
    return out


def _cell(value: Any) -> str:
    if value is None or value == "" or value == []:
        return NONE
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def format_rows(headers: list[str], rows: Iterable[list[Any]], widths: list[int] | None = None) -> Iterator[str]:
    """Column-aligned lines, header first. Without ``widths`` all rows are read to size the columns."""
    cells: Iterable[list[str]]
    if widths is None:
        cells = [[_cell(v) for v in row] for row in rows]
        widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    else:
        cells = ([_cell(v) for v in row] for row in rows)
    yield GAP.join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()
    for row in cells:
        yield GAP.join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()


class Terminal:
    def __init__(self, verbosity: int = 0, output: str = "table"):
        self.verbosity = verbosity
        self.output = output

    # ---- data (stdout) ----
    def line(self, text: str = "") -> None:
        click.echo(text)

    def payloads(self, chunks: Iterable[bytes]) -> None:
        """Bytes as they are, flushed at the end (``ledger read``: a batch of entries' payloads)."""
        out = sys.stdout.buffer
        for chunk in chunks:
            out.write(chunk)
        out.flush()

    def document(self, obj: Any, table: Callable[[], None]) -> None:
        """One object: ``table()`` renders it for people; json/yaml dump ``obj``."""
        if self.output == "json":
            click.echo(json.dumps(obj, indent=2))
        elif self.output == "yaml":
            import yaml

            click.echo(yaml.safe_dump(obj, sort_keys=False).rstrip())
        else:
            table()

    def table(self, headers: list[str], rows: list[list[Any]], empty: str = "nothing found") -> None:
        """Columns for people; when there are no rows, ``empty`` goes to stderr and stdout stays empty."""
        if not rows:
            click.echo(empty, err=True)
            return
        for text in format_rows(headers, rows):
            click.echo(text)

    def bars(self, parts: list[tuple[str, str, str]], rows: list[tuple[str, list[int], str]], width: int) -> None:
        """A bar chart: each row ``(label, cells of each part, text after the bar)``; ``parts`` are ``(name, colour,
        character)``, drawn left to right and named in a legend below (colour in a terminal, characters anywhere)."""
        from rich.console import Console
        from rich.text import Text

        console = Console(highlight=False, soft_wrap=True)
        label_width = max((len(label) for label, _, _ in rows), default=0)
        for label, cells, after in rows:
            line = Text(f"{label:<{label_width}} ")
            for (_, colour, char), count in zip(parts, cells, strict=True):
                line.append(char * count, style=colour)
            line.append(" " * (width - sum(cells)) + f" {after}")
            console.print(line)
        legend = Text(" " * (label_width + 1))
        for i, (name, colour, char) in enumerate(parts):
            legend.append(("  " if i else "") + f"{char} {name}", style=colour)
        console.print(legend)

    def fields(self, pairs: list[tuple[str, Any]]) -> None:
        """A ``describe``-style block of ``Name: value`` lines."""
        width = max(len(name) for name, _ in pairs) + 1
        for name, value in pairs:
            click.echo(f"{name + ':':<{width}} {_cell(value)}")

    def documents(self, items: Iterable[Any], doc: Callable[[Any], Any], lines: bool = False) -> int:
        """``doc(item)`` of each item as it comes, as one JSON array (yaml: one list); with ``lines``, json gives one
        object per line instead (a ``--follow`` that may never end, as ``kubectl get -w -o json``). Returns how many
        items were printed."""
        count = 0
        if self.output == "yaml":
            import yaml

            for item in items:
                count += 1
                click.echo(yaml.safe_dump([doc(item)], sort_keys=False).rstrip())
            if not count:
                click.echo("[]")
            return count
        out, iterator = sys.stdout, iter(items)
        head = list(itertools.islice(iterator, 1))  # before "[": an error on the way to the first item prints nothing
        if lines:
            for item in itertools.chain(head, iterator):
                count += 1
                out.write(json.dumps(doc(item)) + "\n")
                out.flush()
            return count
        out.write("[")
        for count, item in enumerate(itertools.chain(head, iterator), 1):
            out.write(("\n  " if count == 1 else ",\n  ") + json.dumps(doc(item)))
        out.write("\n]\n" if count else "]\n")
        out.flush()
        return count

    def stream(
        self,
        items: Iterable[Any],
        headers: list[str],
        row: Callable[[Any], list],
        doc: Callable,
        empty: str,
        widths: list[int] | None = None,
    ) -> int:
        """Print a possibly huge list as it is produced; return how many items were printed. The columns are as
        wide as the first ``WIDTH_SAMPLE`` rows need; with ``widths`` known up front, each row is printed as it
        comes (items that come slowly: a rate-limited update)."""
        if self.output in ("json", "yaml"):
            return self.documents(items, doc)
        count = 0
        iterator = iter(items)
        sample = [row(item) for item in itertools.islice(iterator, 1 if widths else WIDTH_SAMPLE)]
        if not sample:
            click.echo(empty, err=True)
            return 0
        if widths is None:
            widths = [max([len(h), *(len(_cell(r[i])) for r in sample)]) for i, h in enumerate(headers)]
        else:
            widths = [max(len(h), w) for h, w in zip(headers, widths, strict=True)]
        rows = itertools.chain(sample, (row(item) for item in iterator))
        lines = format_rows(headers, rows, widths)
        click.echo(next(lines))  # the header
        for text in lines:
            count += 1
            click.echo(text)
        return count

    def outcomes(self, items: Iterable[Any], doc: Callable[[Any], Any], text: Callable[[Any], str]) -> None:
        """What an action did to each of its targets, printed as each is done: a line ``text(item)`` for people
        (``ledger/3 deleted``), or ``doc(item)`` in one JSON array or YAML list. A target it failed on is not an
        item: the failure is said on stderr."""
        if self.output in ("json", "yaml"):
            self.documents(items, doc)
            return
        for item in items:
            click.echo(text(item))

    # ---- progress (stderr, only on a terminal) ----
    @contextlib.contextmanager
    def progress(
        self, description: str, total: float | None = None, unit: str = "entries", total_bytes: int | None = None
    ):
        """A live progress bar on stderr when it is a terminal; otherwise nothing. Yields ``advance(n, size=0)``;
        with ``total_bytes``, the bar also counts bytes (``size`` bytes per call), shows their rate, and the time
        left is that of the bytes left at that rate."""
        with self.phases() as bar:
            bar.phase(description, None if total is None else int(total), unit, total_bytes)
            yield bar.advance

    @contextlib.contextmanager
    def phases(self) -> Iterator[Progress]:
        """A :class:`bookie.progress.Progress` for work in phases (each with its own total), shown as
        :meth:`progress` shows one: on stderr, only when it is a terminal."""
        from bookie.progress import NO_PROGRESS

        if not stderr_is_terminal():
            yield NO_PROGRESS
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        columns = [
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}"),
            TextColumn("{task.fields[sizes]}"),  # bytes done of the total, for a phase that counts them
            _time_left_column(),
        ]
        # Lines printed to stdout while the bar is up go above it when both are the same terminal; redirected
        # (a pipe, a file, -o json into jq) they stay on stdout, untouched.
        with Progress(
            *columns,
            console=Console(stderr=True, force_terminal=True),
            transient=True,
            redirect_stdout=sys.stdout.isatty(),
        ) as bar:
            shown = _Bar(bar)
            try:
                yield shown
            finally:
                shown.flush()  # the last counts drawn before the bar goes

    # ---- questions (stderr) ----
    def confirm(self, question: str, action: str, yes: bool) -> None:
        """Ask before a destructive ``action`` unless ``yes`` (--yes); without a terminal to ask on, refuse (exit 2).
        An answer other than yes aborts the command (exit 1, "error: aborted")."""
        if yes:
            return
        if not sys.stdin.isatty():
            from bookie.errors import InvalidArgument

            raise InvalidArgument(f"refusing to {action} without --yes: no terminal to confirm on")
        click.confirm(question, abort=True, err=True)

    # ---- diagnostics (stderr) ----
    def info(self, message: str) -> None:
        if self.verbosity >= 1:
            click.echo(message, err=True)

    def note(self, message: str) -> None:
        """A line for the user beside the result, on stderr: what to do next."""
        if self.verbosity >= 0:
            click.echo(message, err=True)

    def warn(self, message: str) -> None:
        if self.verbosity >= 0:  # -1: no output at all (shell completion, whose stderr is the user's prompt)
            click.echo(f"warning: {message}", err=True)

    def error(self, message: str) -> None:
        click.echo(f"error: {message}", err=True)


class _Bar:
    """A :class:`bookie.progress.Progress` drawn by rich: one bar, the current phase's. Advances are added up and
    handed to rich at most every ``REDRAW`` seconds (it redraws 10 times a second): a check counts hundreds of
    thousands of answers, and rich's update costs microseconds each."""

    REDRAW = 0.1

    def __init__(self, bar: Any):
        self.bar = bar
        self.task: Any = None
        self.total_bytes: int | None = None
        self.bytes = 0
        self.started = 0.0
        self.pending = 0  # items advanced since the last update
        self.shown = float("-inf")  # when rich was last updated

    def phase(self, name: str, total: int | None, unit: str = "items", total_bytes: int | None = None) -> None:
        if self.task is not None:
            self.bar.remove_task(self.task)
        self.total_bytes, self.bytes, self.pending, self.started = total_bytes, 0, 0, time.monotonic()
        self.shown = float("-inf")
        sizes = "" if total_bytes is None else f"{format_bytes(0)}/{format_bytes(total_bytes)}"
        self.task = self.bar.add_task(
            name, total=total, unit=unit, total_bytes=total_bytes, sizes=sizes, rate="", left=""
        )

    def advance(self, n: int = 1, size: int = 0) -> None:
        self.pending += n
        self.bytes += size
        now = time.monotonic()
        if now - self.shown >= self.REDRAW:
            self.flush(now)

    def flush(self, now: float | None = None) -> None:
        """Hand rich what was advanced since its last update."""
        if self.task is None:
            return
        self.shown = time.monotonic() if now is None else now
        fields = {}
        if self.total_bytes is not None:
            fields["sizes"] = f"{format_bytes(self.bytes)}/{format_bytes(self.total_bytes)}"
            elapsed = self.shown - self.started
            if self.bytes and elapsed > 0:
                rate = self.bytes / elapsed
                left = max(0, self.total_bytes - self.bytes) / rate
                fields["rate"] = f"{format_bytes(int(rate))}/s"
                fields["left"] = f"ETA {int(left) // 60}:{int(left) % 60:02d}"
        self.bar.update(self.task, advance=self.pending, **fields)
        self.pending = 0


def _time_left_column() -> Any:
    from rich.progress import ProgressColumn, TimeRemainingColumn
    from rich.text import Text

    class TimeLeft(ProgressColumn):
        """The bytes' rate and the time they leave at it; without a byte total, the time the items leave."""

        items = TimeRemainingColumn()

        def render(self, task: Any) -> Any:
            if task.fields["total_bytes"] is None:
                return self.items.render(task)
            return Text(f"{task.fields['rate']} {task.fields['left']}")

    return TimeLeft()
