"""cluster check's textfile: rewritten on every run, a failed one keeping the last success time."""

import os
import stat

from admin.check.prometheus import LAST_SUCCESS, SUCCESS, last_success, write_failure, write_textfile


def gauges(path):
    lines = path.read_text().splitlines()
    return {line.split()[0]: float(line.split()[1]) for line in lines if not line.startswith("#")}


def test_a_failed_run_says_so_keeps_the_last_success_and_drops_the_counts(tmp_path):
    path = tmp_path / "check.prom"
    write_failure(path)  # nothing before it: no last success to keep
    assert gauges(path) == {SUCCESS: 0}
    write_textfile(path, {"NUM_BOOKIES_UNAVAILABLE": 0}, {"checked_ledgers": 5})
    ok = gauges(path)
    assert ok[SUCCESS] == 1 and ok["bkctl_check_checked_ledgers"] == 5
    assert ok["bkctl_check_num_bookies_unavailable"] == 0
    assert last_success(path) == ok[LAST_SUCCESS] > 0
    write_failure(path)
    assert gauges(path) == {SUCCESS: 0, LAST_SUCCESS: ok[LAST_SUCCESS]}
    write_failure(path)  # and it stays, run after failed run
    assert gauges(path) == {SUCCESS: 0, LAST_SUCCESS: ok[LAST_SUCCESS]}
    assert [p.name for p in tmp_path.iterdir()] == ["check.prom"]  # no temporary file left


def test_the_file_keeps_the_mode_node_exporter_reads_it_with(tmp_path):
    path = tmp_path / "check.prom"
    path.write_text("")
    os.chmod(path, 0o644)
    write_failure(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
