"""The storage view over the admin service's wire form, and the transport that cannot carry it."""

import pytest

from bookie.client.http_admin_client import HttpBookieAdminClient
from bookie.codec.storage_view import DirView, EntryRange, GcView, LogView, StorageView, from_message, to_message
from bookie.errors import AdminServiceMissing, NotInHttpAdminApi


def test_a_view_comes_back_whole_from_its_message():
    view = StorageView(
        bookie_id="127.0.0.1:3181",
        storage="db",
        source="admin",
        dirs=[DirView("/d", "ledger", {"journal": 0, "entryLogs": 2048, "index": 10, "other": 3}, 100, 50, False)],
        logs=[LogView(3, "/d", 2048, {7: 1000, 8: 24}, True, 1.5, ""), LogView(2, "/d", 9, {}, False, 2.0, "EIO")],
        local_ledgers={7: 12, 8: -1},
        gc=GcView(0.2, 0.8, 3600, 86400, 600_000, 86_400_000, ["major"], {"major": 1.0, "minor": 2.0}, 3.5),
        read_only=True,
        ledger_ranges=[EntryRange(0, 9, 3), EntryRange(10, 10, 2)],
    )
    assert from_message(to_message(view)) == view
    unnamed = StorageView(None, "interleaved", "offline", [], [], {}, GcView(0.2, 0.8, 1, 1, 1, 0))
    assert from_message(to_message(unnamed)) == unnamed  # no bookie id, no next run: None, not "" or 0


def test_bookkeepers_http_api_cannot_say_what_the_disks_hold():
    with pytest.raises(NotInHttpAdminApi, match="read its directories on its host") as raised:
        HttpBookieAdminClient("127.0.0.1:3181", ("127.0.0.1", 1)).storage_usage()
    assert isinstance(raised.value, AdminServiceMissing)  # exit 7, as any admin operation a bookie does not serve
