"""JSON written as BookKeeper's JsonUtil writes it. Expected bodies: printed by BookKeeper's own
``org.apache.bookkeeper.common.util.JsonUtil.toJson`` and ``java.util.HashMap`` (the oracle's classpath, Java 17)."""

from bookie.codec.jackson import hash_map, java_string_hash, pretty


def test_objects_arrays_and_empties_as_jackson_prints_them():
    state = {"running": True, "readOnly": False, "n": 5, "ids": [1, 2], "e": {}}
    assert (
        pretty(state) == '{\n  "running" : true,\n  "readOnly" : false,\n  "n" : 5,\n  "ids" : [ 1, 2 ],\n'
        '  "e" : { }\n}'
    )
    assert (
        pretty([state]) == '[ {\n  "running" : true,\n  "readOnly" : false,\n  "n" : 5,\n  "ids" : [ 1, 2 ],\n'
        '  "e" : { }\n} ]'
    )
    assert pretty([]) + pretty({}) == "[ ]{ }"
    assert pretty("Triggered GC on BookieServer: 127.0.0.1:3181") == '"Triggered GC on BookieServer: 127.0.0.1:3181"'


def test_strings_escape_control_characters_in_upper_case_hex_and_nothing_else():
    # Jackson: "\\u001F", where Python's json module writes "\\u001f"
    assert pretty('ctl\x01\x1f\x7f\u2028\u00e9\t"\\') == '"ctl\\u0001\\u001F\x7f\u2028\u00e9\\t\\"\\\\"'


def test_hash_map_iterates_as_javas():
    assert java_string_hash("isMajorGcSuspended") == -148608464
    assert java_string_hash("zkServers") == -315164385
    suspended = hash_map([("isMajorGcSuspended", "true"), ("isMinorGcSuspended", "false")])
    assert pretty(suspended) == '{\n  "isMinorGcSuspended" : "false",\n  "isMajorGcSuspended" : "true"\n}'
    keys = [
        "metadataServiceUri",
        "bookiePort",
        "journalDirectories",
        "ledgerDirectories",
        "prometheusStatsHttpPort",
        "bkctlAdminPort",
        "zkTimeout",
        "listeningInterface",
        "httpServerEnabled",
        "httpServerPort",
        "httpServerHost",
        "journalFlushWhenQueueEmpty",
        "flushEntrylogBytes",
    ]  # 13 keys: a 32-slot table
    assert list(hash_map((k, "v") for k in keys)) == [
        "bkctlAdminPort",
        "prometheusStatsHttpPort",
        "httpServerPort",
        "bookiePort",
        "httpServerHost",
        "ledgerDirectories",
        "zkTimeout",
        "listeningInterface",
        "metadataServiceUri",
        "httpServerEnabled",
        "flushEntrylogBytes",
        "journalFlushWhenQueueEmpty",
        "journalDirectories",
    ]
