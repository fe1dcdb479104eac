"""Who created a ledger, as Pulsar records it in the ledger's custom metadata (apache/pulsar
``LedgerMetadataUtils``), and topic names in Pulsar's spellings.

Every ledger a broker creates carries ``application=pulsar`` and a ``component``:

| component          | keys (Pulsar 2.2+)                               | older spellings                          |
|--------------------|--------------------------------------------------|------------------------------------------|
| managed-ledger     | pulsar/managed-ledger (+ pulsar/cursor for the   | psr/managed-ledger, psr/cursor           |
|                    | cursor ledgers of that managed ledger)           |                                          |
| compacted-ledger   | pulsar/compactedTopic, pulsar/compactedTo        | component managed-ledger + compactedTopic|
| schema             | pulsar/schemaId                                  | schemaId                                 |

Other components (e.g. delayed-index-bucket, Pulsar 3.x's delayed-delivery snapshots) are Pulsar's, but bkctl does
not read where they are referenced: such ledgers are never called orphans.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from urllib.parse import unquote_plus

APPLICATION = "application"
COMPONENT = "component"
MANAGED_LEDGER_KEYS = ("pulsar/managed-ledger", "psr/managed-ledger")
CURSOR_KEYS = ("pulsar/cursor", "psr/cursor")
COMPACTED_TOPIC_KEYS = ("pulsar/compactedTopic", "compactedTopic")
SCHEMA_ID_KEYS = ("pulsar/schemaId", "schemaId")
COMPACTION_CURSOR = "__compaction"  # Compactor.COMPACTION_SUBSCRIPTION
COMPACTED_TOPIC_LEDGER = "CompactedTopicLedger"  # the compaction cursor's property naming the compacted ledger


class Kind(enum.StrEnum):
    LEDGER = "ledger"  # a managed ledger's data ledger
    CURSOR = "cursor"  # a cursor's position ledger
    SCHEMA = "schema"
    COMPACTED = "compacted"  # a compacted topic's ledger
    OTHER = "other"  # Pulsar's, of a component bkctl does not audit


@dataclass(frozen=True)
class Owner:
    """What a Pulsar ledger's custom metadata says it belongs to. ``topic`` is ``persistent://tenant/ns/name``."""

    kind: Kind
    topic: str | None
    managed_ledger: str | None = None  # tenant/namespace/persistent/encoded-name
    cursor: str | None = None
    schema_id: str | None = None
    component: str = ""

    def describe(self) -> str:
        """One line: ``persistent://t/ns/x``, ``... cursor sub``, ``schema t/ns/x``."""
        if self.kind == Kind.CURSOR:
            return f"{self.topic} cursor {self.cursor}"
        if self.kind == Kind.SCHEMA:
            return f"schema {self.schema_id}"
        if self.kind == Kind.OTHER:
            return f"component {self.component or '<none>'}"
        return self.topic or "<none>"


def _text(metadata: dict[str, bytes], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        if key in metadata:
            return metadata[key].decode("utf-8", "replace")
    return None


def owner_of(metadata: dict[str, bytes]) -> Owner | None:
    """The owner a ledger's custom metadata names; None when Pulsar did not create it."""
    if metadata.get(APPLICATION) != b"pulsar":
        return None
    component = metadata.get(COMPONENT, b"").decode("utf-8", "replace")
    compacted_topic = _text(metadata, COMPACTED_TOPIC_KEYS)
    if component == "compacted-ledger" or (component == "managed-ledger" and compacted_topic):
        return Owner(Kind.COMPACTED, compacted_topic, component=component)
    if component == "managed-ledger":
        name = _text(metadata, MANAGED_LEDGER_KEYS)
        if name is None:
            return Owner(Kind.OTHER, None, component=component)
        cursor = _text(metadata, CURSOR_KEYS)
        kind = Kind.CURSOR if cursor is not None else Kind.LEDGER
        return Owner(kind, topic_of_managed_ledger(name), managed_ledger=name, cursor=cursor, component=component)
    if component == "schema":
        schema_id = _text(metadata, SCHEMA_ID_KEYS)
        if schema_id is None:
            return Owner(Kind.OTHER, None, component=component)
        return Owner(Kind.SCHEMA, topic_of_schema(schema_id), schema_id=schema_id, component=component)
    return Owner(Kind.OTHER, None, component=component)


# ---- names ----
def topic_of_managed_ledger(name: str) -> str:
    """``t/ns/persistent/a%20b`` → ``persistent://t/ns/a b`` (v1 names have a cluster: ``t/c/ns/persistent/x``).
    The local name is stored URL-encoded (Pulsar's Codec.encode)."""
    parts = name.split("/")
    if "persistent" in parts[2:4]:
        at = parts.index("persistent", 2)
        namespace, local = "/".join(parts[:at]), "/".join(parts[at + 1 :])
        return f"persistent://{namespace}/{unquote_plus(local)}"
    return name


def topic_of_schema(schema_id: str) -> str:
    """A schema id (``t/ns/x``, the topic without its domain) as the persistent topic it serves."""
    namespace, _, local = schema_id.rpartition("/")
    return f"persistent://{namespace}/{unquote_plus(local)}"


def split_topic(topic: str) -> tuple[str, str, str]:
    """``persistent://t/ns/x`` → ``("t", "t/ns", "persistent://t/ns/x")``: tenant, namespace, topic (for usage).
    A partition (``x-partition-3``) is a topic of its own here, as it is a managed ledger of its own."""
    rest = topic.split("://", 1)[-1]
    parts = rest.split("/")
    tenant = parts[0]
    namespace = "/".join(parts[:-1]) if len(parts) > 2 else tenant
    return tenant, namespace, topic
