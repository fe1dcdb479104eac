"""What a check reports, under Apache BookKeeper's gauge names."""

PLACEMENT_FAIL = "NUM_LEDGERS_NOT_ADHERING_TO_PLACEMENT_POLICY"
PLACEMENT_SOFT = "NUM_LEDGERS_SOFTLY_ADHERING_TO_PLACEMENT_POLICY"
UNDER_REPLICATED_TOO_LONG = "NUM_UNDERREPLICATED_LEDGERS_ELAPSED_RECOVERY_GRACE_PERIOD"
NO_REPLICA = "NUM_LEDGERS_HAVING_NO_REPLICA_OF_AN_ENTRY"
LESS_THAN_AQ = "NUM_LEDGERS_HAVING_LESS_THAN_AQ_REPLICAS_OF_AN_ENTRY"
LESS_THAN_WQ = "NUM_LEDGERS_HAVING_LESS_THAN_WQ_REPLICAS_OF_AN_ENTRY"
# ours: registered, yet did not answer on the recheck either; or missing: a ledger names it, and it is not registered
UNAVAILABLE_BOOKIES = "NUM_BOOKIES_UNAVAILABLE"
# ours: add or read p99 several times the other bookies' median (admin.top.flag_slow), from their /metrics
SLOW_BOOKIES = "NUM_BOOKIES_SLOW"

ALL = (
    PLACEMENT_FAIL,
    PLACEMENT_SOFT,
    UNDER_REPLICATED_TOO_LONG,
    NO_REPLICA,
    LESS_THAN_AQ,
    LESS_THAN_WQ,
    UNAVAILABLE_BOOKIES,
    SLOW_BOOKIES,
)
# counted and listed, but not problems: they do not make a check fail (a slow bookie loses no data)
WARNINGS = frozenset({PLACEMENT_SOFT, SLOW_BOOKIES})


def replica_category(write_quorum: int, ack_quorum: int, most_missing: int) -> str | None:
    """The durability category of a ledger whose worst entry misses ``most_missing`` of its WQ copies."""
    left = write_quorum - most_missing
    if most_missing <= 0:
        return None
    if left == 0:
        return NO_REPLICA
    if left < ack_quorum:
        return LESS_THAN_AQ
    return LESS_THAN_WQ
