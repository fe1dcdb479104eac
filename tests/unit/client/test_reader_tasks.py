"""A whole-ledger read whose consumer stops early leaves nothing running and no error untaken: the window read ahead
is cancelled (seen in CI as "Task exception was never retrieved" after "ledger 0 was deleted": the window read ahead
found the ledger deleted after the reader had stopped)."""

import asyncio
import gc

from bookie.client.reader import LedgerReader
from bookie.errors import NoSuchLedger


class _DeletedLater(LedgerReader):
    """A reader of two windows: the first reads at once, the one read ahead then finds the ledger deleted (the
    storage parts are not needed: only iter_windows' own steps run)."""

    def __init__(self) -> None:
        self.read_ahead_ended = False

    def _windows(self, first, last):
        yield from [(None, 0, 9), (None, 10, 19)]

    async def _read_window(self, segment, first, last):
        if first == 0:
            return []
        try:
            await asyncio.sleep(0.01)
            raise NoSuchLedger("ledger 0 was deleted", ledger_id=0)
        finally:
            self.read_ahead_ended = True


def test_a_reader_stopped_early_cancels_the_window_read_ahead():
    unretrieved: list[dict] = []
    reader = _DeletedLater()

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: unretrieved.append(context))
        async for _ in reader.iter_windows(0, 19):
            break  # the consumer stops: the generator is closed, and with it the window read ahead
        await asyncio.sleep(0.05)
        gc.collect()  # a task whose error was never taken says so when it is collected

    asyncio.run(main())
    gc.collect()
    assert reader.read_ahead_ended
    assert unretrieved == []
