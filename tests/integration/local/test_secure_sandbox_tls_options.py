"""bkctl's --tls-* options on the secure sandbox: each part the options leave out (the trust store, the client
certificate) comes from the sandbox, and what cannot be used is one line and exit 2, never a traceback."""

import json
import os
import subprocess
import sys

import pytest


def bkctl(*args, directory, env=None, input=None):
    return subprocess.run(
        [sys.executable, "-m", "bkctl", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "BKCTL_SANDBOX_DIR": str(directory), **(env or {})},
    )


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A secure sandbox with one closed ledger (written by bkctl as its admin): its directory and the ledger."""
    directory = tmp_path_factory.mktemp("secure") / "sandbox"
    started = bkctl("sandbox", "start", "--secure", "--bookies", "3", "-o", "json", directory=directory)
    assert started.returncode == 0, started.stderr
    try:
        created = bkctl(
            "ledger", "create", "-e", "2", "-w", "2", "-a", "2", "--input", "-", input="a\nb\nc\n", directory=directory
        )
        assert created.returncode == 0, created.stderr
        yield directory, created.stdout.strip()
    finally:
        bkctl("sandbox", "stop", directory=directory)


def one_line_error(result, code: int, message: str) -> None:
    assert result.returncode == code, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    assert message in result.stderr


def test_a_certificate_without_a_trust_store_takes_the_sandbox_trust_store(sandbox):
    directory, ledger = sandbox
    tls = directory / "tls"
    read = bkctl(
        "-v", "--tls-cert", str(tls / "bkctl.pem"), "--tls-key", str(tls / "bkctl-key.pem"), "ledger", "read", ledger,
        directory=directory,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr
    assert read.stdout.split() == ["a", "b", "c"]
    assert "TLS to the bookies (from --tls-* options or BKCTL_TLS_* variables, and the secure sandbox)" in read.stderr


def test_a_trust_store_alone_takes_the_sandbox_certificate(sandbox):
    directory, ledger = sandbox
    read = bkctl("--tls-trust-store", str(directory / "tls" / "ca.pem"), "ledger", "read", ledger, directory=directory)
    assert read.returncode == 0, read.stderr
    assert read.stdout.split() == ["a", "b", "c"]


def test_partial_or_unusable_tls_options_are_one_line_errors(sandbox, tmp_path):
    from cryptography.hazmat.primitives import serialization

    directory, ledger = sandbox
    tls = directory / "tls"
    cert, key = str(tls / "bkctl.pem"), str(tls / "bkctl-key.pem")
    encrypted, wrong = tmp_path / "encrypted-key.pem", tmp_path / "wrong-password"
    private = serialization.load_pem_private_key((tls / "bkctl-key.pem").read_bytes(), None)
    pem = serialization.Encoding.PEM
    protected = private.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"right")
    )
    for path, data in ((encrypted, protected), (wrong, b"wrong")):
        path.write_bytes(data)
        path.chmod(0o600)
    missing = str(tmp_path / "missing.pem")
    cases = [
        (["--tls-key", key], "a PEM client key needs its certificate: give --tls-key and --tls-cert together"),
        (["--tls-cert", cert], "a PEM client key needs its certificate: give --tls-key and --tls-cert together"),
        (["--tls-key-password-file", str(wrong)], "--tls-key-password-file is the password of a key: give --tls-key"),
        (["--tls-cert", cert, "--tls-key", missing], f"TLS key {missing} cannot be read: No such file or directory"),
        (["--tls-trust-store", missing], f"TLS trust store {missing} cannot be read: No such file or directory"),
        (["--tls-cert", missing, "--tls-key", key], f"TLS certificate file {missing} cannot be read"),
        (
            ["--tls-cert", cert, "--tls-key", str(encrypted), "--tls-key-password-file", str(wrong)],
            f"TLS private key file {encrypted} cannot be read",
        ),
    ]
    for options, message in cases:
        one_line_error(bkctl(*options, "ledger", "read", ledger, directory=directory), 2, message)


def test_without_a_cluster_that_gives_a_trust_store_a_certificate_alone_is_refused_in_one_line(sandbox):
    directory, ledger = sandbox
    tls = directory / "tls"
    uri = f"zk+hierarchical://127.0.0.1:{json.loads((directory / 'sandbox.json').read_text())['zk_port']}/ledgers"
    login = {"BKCTL_ZK_ENABLE_SECURITY": "true", "BKCTL_ZK_DIGEST_AUTH_FILE": str(directory / "zk-digest")}
    options = ["--tls-cert", str(tls / "bkctl.pem"), "--tls-key", str(tls / "bkctl-key.pem")]
    refused = bkctl("-u", uri, *options, "ledger", "read", ledger, directory=directory, env=login)
    one_line_error(refused, 2, "TLS needs --tls-trust-store (the CA certificates that signed the bookies')")
