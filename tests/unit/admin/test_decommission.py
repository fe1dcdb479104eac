"""The decommission's waiting (bookie/client/decommission.py), on a stand-in for the copy: it reports every stall
of a pass, not only the first, and Ctrl-C while it classifies the blockers cancels the copy. (Its copies, blockers
and cookie on real bookies: tests/integration/admin/test_decommission.py.)"""

import asyncio
from types import SimpleNamespace
from typing import ClassVar

import pytest

import bookie.client.decommission
from admin.decommission import Decommission
from bookie.client.rereplication import RecoverReport


class Copy:
    """BookieRecovery's part the decommission uses: ``run`` follows ``script`` (("sleep", s), ("move", kind), or
    ("until", condition) polled); no ledger names the bookie afterwards."""

    script: ClassVar[list[tuple[str, object]]] = []
    runs: ClassVar[list[asyncio.Task]] = []

    def __init__(self, core, lost, progress=lambda kind, n: None) -> None:
        self.progress, self.report = progress, RecoverReport()

    def affected(self, ledger_ids=None):
        return []

    def bytes_to_copy(self, ledgers):
        return 0

    async def run(self, ledgers):
        Copy.runs.append(asyncio.current_task())
        for step, arg in Copy.script:
            if step == "sleep":
                await asyncio.sleep(arg)
            elif step == "until":  # for 10 s at most: then the events the test asserts tell what did not happen
                for _ in range(1000):
                    if arg():
                        break
                    await asyncio.sleep(0.01)
            else:
                self.progress(arg, 1)
        self.report.recovered = [lid for lid, _ in ledgers]
        return self.report


@pytest.fixture
def copy(monkeypatch):
    monkeypatch.setattr(bookie.client.decommission, "BookieRecovery", Copy)
    monkeypatch.setattr(bookie.client.decommission, "registered", lambda store, bookie_id: False)
    Copy.runs = []
    return Copy


def test_a_copy_that_resumes_then_stalls_again_is_reported_again(copy):
    events: list[str] = []
    job = Decommission(
        SimpleNamespace(store=None),
        "b:1",
        0.3,
        progress=lambda kind, n: events.append(kind),
        on_stall=lambda report: events.append("stall"),
    )

    async def blockers():
        return []

    job._blockers = blockers  # type: ignore[method-assign]
    # stalls, resumes once reported, stalls again, then moves nothing for three stall_after: each step waits for
    # the event before it, so a loaded machine's late event loop changes neither the events nor their order
    copy.script = [
        ("until", lambda: events == ["stall"]),
        ("move", "bytes"),
        ("until", lambda: events == ["stall", "bytes", "stall"]),
        ("sleep", 0.9),
    ]
    report = asyncio.run(job.run([(1, None)], timeout=30))
    assert report.done
    assert events == ["stall", "bytes", "stall"]  # not again without a byte moved in between


def test_an_interruption_while_the_blockers_are_classified_cancels_the_copy(copy):
    job = Decommission(SimpleNamespace(store=None), "b:1", 0.1)
    classifying = asyncio.Event()

    async def blockers():  # as slow as a ZooKeeper that does not answer
        classifying.set()
        await asyncio.Event().wait()

    job._blockers = blockers  # type: ignore[method-assign]
    copy.script = [("sleep", 60)]

    async def interrupted():
        run = asyncio.ensure_future(job.run([(1, None)], timeout=30))
        await classifying.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        [copying] = Copy.runs
        await asyncio.sleep(0)  # the cancelled copy ends at its next step
        return copying.cancelled()  # here: asyncio.run cancels whatever is left once it ends

    assert asyncio.run(interrupted())
