"""The ledger rules every storage shares (bookie/storage/ledger_storage.py), run against both engines: the master
key an add must show, fencing, the explicit LAC, the LAC, and all of them again after a crash and a replay."""

import threading

import pytest

from bookie.errors import LedgerFenced, NoSuchLedger, Unauthorized
from bookie.storage.db.storage import DbLedgerStorage

from support.storage import KEY, add, crash, crash_db

OTHER_KEY = b"wrong" * 4


def journaled(call, *args):
    """Run a storage call that takes a callback last; return once its record is durable."""
    done = threading.Event()
    errors = []
    call(*args, lambda error: (errors.append(error), done.set()))
    assert done.wait(10) and errors == [None]


def crash_and_reopen(open_each_storage, storage):
    """What kill -9 leaves, opened again: only the journal's replay brings back what no checkpoint wrote."""
    crash_db(storage) if isinstance(storage, DbLedgerStorage) else crash(storage)
    return open_each_storage()


def test_the_first_add_sets_the_master_key_and_another_key_is_refused(open_each_storage):
    storage = open_each_storage()
    assert storage.master_key(5) is None  # no such ledger
    assert add(storage, 5, 0, 3) == []
    assert storage.master_key(5) == KEY
    assert storage.ledger(5).master_key == KEY  # the same typed header from either engine
    [(ledger_id, entry_id, error)] = add(storage, 5, 3, 1, key=OTHER_KEY)
    assert (ledger_id, entry_id, type(error)) == (5, 3, Unauthorized)
    with pytest.raises(Unauthorized):
        storage.fence(5, OTHER_KEY, lambda error: None)
    with pytest.raises(NoSuchLedger):
        storage.ledger(6)


def test_an_all_zero_master_key_is_no_key_and_the_next_writers_is_taken(open_each_storage):
    """BookKeeper's LedgerMetadataIndex.setMasterKey rule, on both engines."""
    storage = open_each_storage()
    assert add(storage, 7, 0, 1, key=bytes(20)) == []
    assert storage.master_key(7) is None
    assert add(storage, 7, 1, 1) == []
    assert storage.master_key(7) == KEY
    [(_, _, error)] = add(storage, 7, 2, 1, key=bytes(20))
    assert isinstance(error, Unauthorized)


def test_a_fenced_ledger_takes_recovery_adds_only(open_each_storage):
    storage = open_each_storage()
    add(storage, 5, 0, 3)
    journaled(storage.fence, 5, KEY)
    assert storage.is_fenced(5) and storage.ledger(5).fenced
    [(_, _, error)] = add(storage, 5, 3, 1)
    assert isinstance(error, LedgerFenced)
    assert add(storage, 5, 3, 1, recovery=True) == []
    assert storage.lac(5) == 2


def test_fencing_an_unknown_ledger_creates_it_with_the_fencers_key(open_each_storage):
    storage = open_each_storage()
    journaled(storage.fence, 9, KEY)
    assert storage.master_key(9) == KEY and storage.is_fenced(9) and storage.lac(9) == -1
    [(_, _, error)] = add(storage, 9, 0, 1)
    assert isinstance(error, LedgerFenced)


def test_the_explicit_lac_round_trips_and_raises_the_lac(open_each_storage):
    storage = open_each_storage()
    add(storage, 5, 0, 3)
    assert storage.explicit_lac(5) is None and storage.lac(5) == 1
    journaled(storage.write_explicit_lac, 5, KEY, 2, b"lac-buffer")
    assert storage.explicit_lac(5) == b"lac-buffer" and storage.lac(5) == 2
    journaled(storage.write_explicit_lac, 5, KEY, 1, b"older")
    assert storage.explicit_lac(5) == b"older" and storage.lac(5) == 2  # the LAC never goes back
    with pytest.raises(Unauthorized):
        storage.write_explicit_lac(5, OTHER_KEY, 3, b"x", lambda error: None)


def test_the_lac_advances_and_tells_who_waits(open_each_storage):
    storage = open_each_storage()
    advanced: list[int] = []
    storage.on_lac_advanced = advanced.append
    add(storage, 5, 0, 3)
    assert storage.lac(5) == 1 and advanced == [5]
    add(storage, 5, 3, 2)
    assert storage.lac(5) == 3 and advanced == [5, 5]


def test_a_replay_brings_back_keys_fences_explicit_lacs_and_the_lac(open_each_storage):
    storage = open_each_storage()
    add(storage, 1, 0, 300)
    add(storage, 2, 0, 5)
    journaled(storage.write_explicit_lac, 2, KEY, 3, b"lac-buffer")
    journaled(storage.fence, 2, KEY)
    again = crash_and_reopen(open_each_storage, storage)
    assert again.lac(1) == 298  # the highest piggy-backed LAC of the entries replayed
    assert again.master_key(1) == again.master_key(2) == KEY
    assert not again.is_fenced(1) and again.explicit_lac(1) is None
    assert again.is_fenced(2) and again.explicit_lac(2) == b"lac-buffer"
    [(_, _, error)] = add(again, 1, 300, 1, key=OTHER_KEY)
    assert isinstance(error, Unauthorized)
    [(_, _, error)] = add(again, 2, 5, 1)
    assert isinstance(error, LedgerFenced)
    assert add(again, 1, 300, 1) == [] and again.lac(1) == 299


def test_after_a_clean_restart_the_lac_is_the_last_entrys(open_each_storage):
    storage = open_each_storage()
    add(storage, 1, 0, 10)
    storage.shutdown()  # checkpointed: nothing to replay, the LAC comes from the last entry stored
    again = open_each_storage()
    assert again.lac(1) == 8 and again.master_key(1) == KEY


def test_a_deleted_ledger_is_gone_with_its_lac(open_each_storage):
    storage = open_each_storage()
    add(storage, 1, 0, 10)
    storage.delete_ledger(1)
    assert storage.master_key(1) is None and 1 not in storage.ledger_ids()
    with pytest.raises(NoSuchLedger):
        storage.lac(1)
