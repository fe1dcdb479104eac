"""Credentials of conftest's secure_zookeeper and credentials fixtures, and files that hold them."""

from __future__ import annotations

from pathlib import Path

SASL_USER, SASL_PASSWORD = "bookkeeper", "sasl-Pw-8c1f"
DIGEST_USER, DIGEST_PASSWORD = "bkadmin", "digest-Pw-51e0"
LEDGER_PASSWORD = "ledger-Pw-77aa"
SECRETS = (SASL_PASSWORD, DIGEST_PASSWORD, LEDGER_PASSWORD)


def private_file(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def jaas_client(path: Path, user: str = SASL_USER, password: str = SASL_PASSWORD) -> Path:
    """A JAAS file with ZooKeeper's client login, as a Java bookie's JVM reads it."""
    return private_file(
        path,
        "// java.security.auth.login.config\n"
        "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        f'  username="{user}"\n  password="{_quoted(password)}";\n}};\n',
    )
