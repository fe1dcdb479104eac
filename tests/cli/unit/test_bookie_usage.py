"""`bookie usage` and `ledger list --bookie` refuse bad input in one line, before reading anything."""

from __future__ import annotations

import pytest

from support.cli import NOT_FOUND, USAGE, assert_one_line_error, invoke


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["a:3181", "b:3181", "--ledger-dir", "/x", "--journal-dir", "/y"], USAGE, "name the one BOOKIE"),
        (["a:3181", "--all", "--offline", "--ledger-dir", "/x", "--journal-dir", "/y"], USAGE, "name the one BOOKIE"),
        (["a:3181", "--offline"], USAGE, "name the bookie's directories"),
        (["a:3181", "--ledger-dir", "/nonexistent", "--journal-dir", "/nonexistent"], NOT_FOUND, "no bookie files"),
    ],
)
def test_bookie_usage_offline_needs_one_bookie_and_its_directories(args, code, says):
    result = invoke("bookie", "usage", *args)
    assert_one_line_error(result, code, args)
    assert says in result.stderr


def test_bookie_usage_threshold_is_a_usage_share():
    assert invoke("bookie", "usage", "a:3181", "--threshold", "1.5").exit_code == USAGE


@pytest.mark.parametrize("other", ["--owner", "--meta"])
def test_ledger_list_bookie_is_not_with_owner_or_meta(other):
    args = ["ledger", "list", "--bookie", "a:3181", other]
    result = invoke(*args)
    assert_one_line_error(result, USAGE, args)
