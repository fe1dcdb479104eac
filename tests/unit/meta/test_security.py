"""ZooKeeper credentials from configuration and environment (bookie.meta.security): what is read, what is refused."""

from __future__ import annotations

import pytest
from kazoo.security import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE

from bookie.errors import InvalidArgument
from bookie.meta.security import Credentials, ZkSecurity, read_jaas_login

from support.security import jaas_client, private_file


def test_without_settings_nothing_authenticates_and_znodes_stay_open():
    security = ZkSecurity.from_settings({}, {})
    assert security == ZkSecurity() and not security.authenticated
    assert security.kazoo_options() == {"default_acl": OPEN_ACL_UNSAFE}


def test_digest_credentials_make_what_is_created_the_creators(tmp_path):
    digest = private_file(tmp_path / "digest", "bkadmin:pa:ss word\nignored\n")
    security = ZkSecurity.from_settings({"zkEnableSecurity": "true", "zkDigestAuthFile": str(digest)}, {})
    assert security.digest == Credentials("bkadmin", "pa:ss word")  # the password is all after the first colon
    assert security.kazoo_options() == {
        "default_acl": CREATOR_ALL_ACL,
        "auth_data": [("digest", "bkadmin:pa:ss word")],
    }
    assert "pa:ss" not in repr(security) and "pa:ss" not in security.identity


def test_sasl_login_from_a_jaas_file_named_by_the_environment(tmp_path):
    jaas = jaas_client(tmp_path / "jaas.conf", user="bk", password='we"ird//pw')
    environ = {"BKCTL_ZK_ENABLE_SECURITY": "TRUE", "BKCTL_ZK_JAAS_CONFIG": str(jaas)}
    security = ZkSecurity.from_settings({}, environ)
    assert security.enable_security and security.identity == "sasl:bk"
    assert security.kazoo_options()["sasl_options"] == {
        "mechanism": "DIGEST-MD5",
        "username": "bk",
        "password": 'we"ird//pw',
    }


def test_configuration_beats_the_environment(tmp_path):
    mine = private_file(tmp_path / "mine", "mine:1\n")
    theirs = private_file(tmp_path / "theirs", "theirs:2\n")
    security = ZkSecurity.from_settings({"zkDigestAuthFile": str(mine)}, {"BKCTL_ZK_DIGEST_AUTH_FILE": str(theirs)})
    assert security.digest is not None and security.digest.user == "mine"


def test_jaas_sections_comments_and_another_section_name(tmp_path):
    jaas = private_file(
        tmp_path / "jaas.conf",
        '/* the bookie\'s */ Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="x"; };\n'
        "BookKeeper {\n  // a comment; with a semicolon\n"
        "  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        '  username=bk password="p;w";\n};\n',
    )
    assert read_jaas_login(str(jaas), "BookKeeper") == Credentials("bk", "p;w")
    security = ZkSecurity.from_settings(
        {"java.security.auth.login.config": str(jaas), "zookeeper.sasl.clientconfig": "BookKeeper"}, {}
    )
    assert security.sasl == Credentials("bk", "p;w")
    with pytest.raises(InvalidArgument, match=r"has no Client section \(sections: BookKeeper, Server\)"):
        read_jaas_login(str(jaas))


@pytest.mark.parametrize(
    ("settings", "files", "message"),
    [
        ({"zkEnableSecurity": "true"}, {}, r"zkEnableSecurity in c.conf=true needs ZooKeeper credentials"),
        ({"zkEnableSecurity": "yes"}, {}, r"zkEnableSecurity in c.conf='yes': expected true or false"),
        ({"zkDigestAuthFile": "F"}, {"F": (0o600, "no colon\n")}, r"its first line must be user:password"),
        ({"zkDigestAuthFile": "F"}, {"F": (0o640, "u:p\n")}, r"mode 0640\): chmod 600 .*/F$"),
        ({"zkDigestAuthFile": "F"}, {}, r"ZooKeeper digest credentials file .*/F does not exist"),
        (
            {"java.security.auth.login.config": "J"},
            {"J": (0o600, "Client { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };")},
            r"login module com.sun.security.auth.module.Krb5LoginModule is not supported",
        ),
        (
            {"java.security.auth.login.config": "J"},
            {"J": (0o600, 'Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="u"; };')},
            r"the Client section needs username and password",
        ),
        ({"java.security.auth.login.config": "J"}, {"J": (0o604, "")}, r"JAAS configuration file .* chmod 600"),
    ],
)
def test_bad_settings_are_one_clear_line(tmp_path, settings, files, message):
    for name, (mode, text) in files.items():
        (tmp_path / name).write_text(text)
        (tmp_path / name).chmod(mode)
    settings = {k: str(tmp_path / v) if k != "zkEnableSecurity" else v for k, v in settings.items()}
    with pytest.raises(InvalidArgument, match=message) as raised:
        ZkSecurity.from_settings(settings, {}, where=" in c.conf")
    assert "\n" not in str(raised.value)


def test_kazoo_debug_records_show_requests_without_their_secrets():
    """kazoo logs requests and responses whole: a digest login, the session password, znode data (ledger metadata
    holds the ledger's password) must not reach bkctl's -vv output."""
    import logging

    from kazoo.protocol.serialization import Auth, Connect, Create, GetData

    from bookie.meta.store import KAZOO_LOG

    records = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    KAZOO_LOG.addHandler(handler)
    level = KAZOO_LOG.level
    KAZOO_LOG.setLevel(logging.DEBUG)
    try:
        KAZOO_LOG.debug("Sending request(xid=%s): %s", -4, Auth(0, "digest", "bkadmin:s3cret"))
        KAZOO_LOG.debug("Sending request(xid=%s): %s", None, Connect(0, 0, 10000, 0, b"sessionpw", None))
        KAZOO_LOG.debug("Sending request(xid=%s): %s", 7, Create("/ledgers/L1", b"password: s3cret", [], 0))
        KAZOO_LOG.debug("Received response(xid=%s): %r", 8, (b"password: s3cret", None))
        KAZOO_LOG.debug("Sending request(xid=%s): %s", 9, GetData("/ledgers/L1", None))
    finally:
        KAZOO_LOG.removeHandler(handler)
        KAZOO_LOG.setLevel(level)
    assert records == [
        "Sending request(xid=-4): Auth(auth_type=0, scheme='digest', auth=<hidden>)",
        "Sending request(xid=None): Connect(protocol_version=0, last_zxid_seen=0, time_out=10000, session_id=0, "
        "passwd=<hidden>, read_only=None)",
        "Sending request(xid=7): Create(path='/ledgers/L1', data='<16 bytes>', acl=[], flags=0)",
        "Received response(xid=8): ['<16 bytes>', None]",
        "Sending request(xid=9): GetData(path='/ledgers/L1', watcher=None)",
    ]
