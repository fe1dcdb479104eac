"""What BookKeeper's protocol costs per frame in the bookie, before storage: a connection's ``data_received`` fed
``--frames`` v3 frames at a time (adds of 1 KiB entries, or plain reads), with a storage that answers at once and a
transport that drops the answers; what the connection records in the metrics is included. Prints microseconds per
frame, add and read, with the C frame codec and with its Python (bookie/codec/frames.py), alternating in the same
process run.

    .venv/bin/python benchmarks/wire_frames.py [--frames 64] [--rounds 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookie.codec import frames, wire
from bookie.server.auth import Authorizer
from bookie.server.metrics import BookieStats
from bookie.server.wire import BookieConnection, WireServer, connection

ENTRY = bytes(1024 + 32)  # a framed 1 KiB entry


class _Transport:
    def write(self, data: bytes) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def set_write_buffer_limits(self, high: int) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class _Storage:
    def read_entry(self, ledger_id: int, entry_id: int) -> bytes:
        return ENTRY

    def lac(self, ledger_id: int) -> int:
        return 0


class _Handlers:
    """The request handlers' share of an add (bookie/server/handlers.py): stored and durable at once."""

    def store_adds(self, keys, records, durable):
        asyncio.get_running_loop().call_soon(durable, None)
        return []

    def add_statuses(self, answers, error, refused):
        return [0] * len(answers), 0


class _Config:
    tls = None  # plaintext, no authentication: the cost of the protocol alone
    authorizer = Authorizer()
    bkctlReadRequiresMasterKey = False


class _Bookie:
    read_only = read_only_by_disk = False
    config = _Config()
    storage = _Storage()
    stats = BookieStats()  # what the connection records per pass


async def per_frame(data: bytes, frames: int, rounds: int) -> float:
    connection = BookieConnection(WireServer(_Bookie(), _Handlers(), wire.MAX_FRAME_SIZE))
    connection.connection_made(_Transport())
    started = time.perf_counter()
    for _ in range(rounds):
        connection.data_received(data)
        await asyncio.sleep(0)  # the adds' answers
    return (time.perf_counter() - started) / rounds / frames * 1e6


CODECS = ("scan_requests_v3", "scan_requests_v2", "add_responses", "read_response_v3")


def use(codec: str) -> None:
    """Make the bookie's connections use the C codec or the Python one."""
    for name in CODECS:
        c_version = getattr(frames._c, name) if frames._c is not None else None
        python = getattr(frames, f"_{name}", None) or getattr(wire, name)
        setattr(frames, name, c_version if codec == "C" else python)
    connection.SCANS.update({True: frames.scan_requests_v3, False: frames.scan_requests_v2})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    adds = b"".join(wire.add_request_v3(i, 7, i, b"k" * 20, ENTRY, False) for i in range(args.frames))
    reads = b"".join(wire.read_request_v3(i, 7, i) for i in range(args.frames))
    codecs = ["C", "Python"] if frames.ACCELERATED else ["Python"]
    if not frames.ACCELERATED:
        print("the C codec is not built (or BKCTL_FRAMES=python): Python only")
    for round_ in (1, 2):
        for codec in codecs:
            use(codec)
            add, read = (asyncio.run(per_frame(data, args.frames, args.rounds)) for data in (adds, reads))
            print(f"round {round_} {codec:6}  add {add:5.2f} us/frame  read {read:5.2f} us/frame")


if __name__ == "__main__":
    main()
