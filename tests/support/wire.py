"""BookKeeper's protocol v3 from a test: request builders and a raw connection to a bookie's port."""

from __future__ import annotations

import socket

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import wire
from bookie.codec.entry import parse_entry

from support.storage import DIGESTER, KEY, framed


def add_requests(ledger_id: int, first: int, count: int, size: int = 100, key: bytes = KEY) -> list[pb.AddRequest]:
    """The v3 adds of those entries."""
    return [
        pb.AddRequest(ledgerId=ledger_id, entryId=entry_id, masterKey=key, body=body)
        for entry_id, body in enumerate(framed(ledger_id, first, count, size), first)
    ]


class WireConn:
    """One connection to a bookie's port in BookKeeper's protocol: raw frames (v3 Requests or v2 records) and their
    answers, or ``ask``: a v3 request message (``pb.AddRequest``, ``pb.ReadRequest``...) in, its Response out."""

    def __init__(self, port: int, timeout: float = 20):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buffer = bytearray()
        self.txn = 0
        self._answers: dict[int, pb.Response] = {}  # v3 answers that came before the one waited for, by txnId
        self._cut: list[bytes] = []  # frames cut from the buffer but not yet taken

    def send(self, *frames: bytes) -> None:
        self.sock.sendall(b"".join(frames))

    def frames(self, count: int) -> list[bytes]:
        """The next ``count`` frames received (those that came with them stay for the next call)."""
        while len(self._cut) < count:
            self._cut += wire.cut_frames(self.buffer)
            if len(self._cut) >= count:
                break
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError(f"closed after {len(self._cut)} of {count} answers")
            self.buffer += data
        got, self._cut = self._cut[:count], self._cut[count:]
        return got

    def closed(self) -> bool:
        """Whether the bookie closed the connection (EOF or reset) within the socket timeout."""
        try:
            while data := self.sock.recv(65536):
                self.buffer += data
        except ConnectionResetError:
            pass
        return True

    def v3(self, operation: int, priority: int | None = None, **fields) -> bytes:
        self.txn += 1
        header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=operation, txnId=self.txn)
        if priority is not None:
            header.priority = priority
        return wire.encode_v3(pb.Request(header=header, **fields))

    def call(self, operation: int, **fields):
        self.send(self.v3(operation, **fields))
        return wire.decode_v3_response(self.frames(1)[0])

    def send_request(self, request, priority: int | None = None) -> int:
        """Send one v3 request for ``request`` (its operation told by its type); its txnId, for ``answer``."""
        return self.send_requests([request], priority)[0]

    def send_requests(self, requests: list, priority: int | None = None) -> list[int]:
        """Send v3 requests in one write (one pass of the bookie's, as a pipelining client's); their txnIds."""
        frames = []
        for request in requests:
            operation, name = _V3_REQUESTS[type(request).__name__]
            frames.append(self.v3(operation, priority, **{name: request}))
        self.send(*frames)
        return list(range(self.txn - len(requests) + 1, self.txn + 1))

    def answer(self, txn: int):
        """The Response to request ``txn`` (answers to other requests that come first are kept for their turn)."""
        while txn not in self._answers:
            response = wire.decode_v3_response(self.frames(1)[0])
            self._answers[response.header.txnId] = response
        return self._answers.pop(txn)

    def ask(self, request, priority: int | None = None):
        """Send ``request`` and return its answer: the operation's response (``pb.AddResponse``...)."""
        response = self.answer(self.send_request(request, priority))
        return getattr(response, _V3_REQUESTS[type(request).__name__][1].replace("Request", "Response"))

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireConn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# a v3 request message's type -> (operation, its field in Request; the answer's field is named ...Response)
_V3_REQUESTS = {
    "AddRequest": (pb.ADD_ENTRY, "addRequest"),
    "ReadRequest": (pb.READ_ENTRY, "readRequest"),
    "WriteLacRequest": (pb.WRITE_LAC, "writeLacRequest"),
    "ReadLacRequest": (pb.READ_LAC, "readLacRequest"),
    "GetBookieInfoRequest": (pb.GET_BOOKIE_INFO, "getBookieInfoRequest"),
    "ForceLedgerRequest": (pb.FORCE_LEDGER, "forceLedgerRequest"),
    "GetListOfEntriesOfLedgerRequest": (pb.GET_LIST_OF_ENTRIES_OF_LEDGER, "getListOfEntriesOfLedgerRequest"),
}


def read_stored(conn: WireConn, ledger_id: int, first: int, last: int) -> dict[int, bytes]:
    """The payloads of entries ``first..last`` that one bookie answers with (reads, pipelined), by entry id."""
    entries = {}
    for start in range(first, last + 1, 500):
        ids = range(start, min(start + 500, last + 1))
        for txn in conn.send_requests([pb.ReadRequest(ledgerId=ledger_id, entryId=e) for e in ids]):
            answer = conn.answer(txn).readResponse
            if answer.status == pb.EOK:
                entry = parse_entry(DIGESTER, answer.body, ledger_id)
                entries[entry.entry_id] = entry.payload
    return entries
