"""ZooKeeper security as BookKeeper does it: ``zkEnableSecurity=true`` makes every znode we create carry
ZooKeeper's ``CREATOR_ALL_ACL`` (all permissions for the identities the session authenticated as, nothing for
anyone else: BookKeeper's ``ZkUtils.getACLs``), which needs an authenticated session.

A session authenticates the way a Java bookie's or client's ZooKeeper client does — SASL DIGEST-MD5 with the
``username``/``password`` of the ``Client`` section of a JAAS file (``java.security.auth.login.config``, the name of
the JVM's system property; ``zookeeper.sasl.clientconfig`` names another section) — or, our own simpler option, with
ZooKeeper's digest scheme (``addauth digest user:password``), from a file named by ``zkDigestAuthFile``. Each key is
read from the configuration (a bookie's ``bk_server.conf``, bkctl's ``-c``), else from its environment variable
(:data:`ENVIRONMENT`). Secrets are read from files only (never a command line ``ps`` shows), and those files must be
private to their owner (:func:`bookie.conf.read_secret_file`).

The identity that creates a cluster is the only one that can use it afterwards: every bookie, bkctl and Java client
of a secure cluster authenticates as the same user, as BookKeeper's documentation asks.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bookie.conf import read_secret_file
from bookie.errors import InvalidArgument

ENABLE_SECURITY = "zkEnableSecurity"
DIGEST_AUTH_FILE = "zkDigestAuthFile"
JAAS_CONFIG = "java.security.auth.login.config"
JAAS_SECTION = "zookeeper.sasl.clientconfig"
# Each key's environment variable, used when the configuration does not set the key.
ENVIRONMENT = {
    ENABLE_SECURITY: "BKCTL_ZK_ENABLE_SECURITY",
    DIGEST_AUTH_FILE: "BKCTL_ZK_DIGEST_AUTH_FILE",
    JAAS_CONFIG: "BKCTL_ZK_JAAS_CONFIG",
    JAAS_SECTION: "BKCTL_ZK_SASL_CLIENTCONFIG",
}
KEYS = frozenset(ENVIRONMENT)
DIGEST_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"

# JAAS's grammar (javax.security.auth.login.ConfigFile): Name { Module Flag key="value" ...; ... }; with // and /* */
# comments. Values may be quoted; what we read is only the login module and its options.
_JAAS_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|/\*.*?\*/|//[^\n]*', re.S)  # a quoted string, or a comment
_JAAS_SECTION = re.compile(r"([\w.-]+)\s*\{(.*?)\}\s*;", re.S)
_JAAS_OPTION = re.compile(r'([\w.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


@dataclass(frozen=True)
class Credentials:
    """A user and its password; the password is never part of the text of the object."""

    user: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class ZkSecurity:
    """How a session authenticates, and whether what it creates is private to it. The default: neither."""

    enable_security: bool = False
    digest: Credentials | None = None  # ZooKeeper's digest scheme
    sasl: Credentials | None = None  # SASL DIGEST-MD5, from a JAAS file's DigestLoginModule

    @property
    def authenticated(self) -> bool:
        return self.digest is not None or self.sasl is not None

    @property
    def identity(self) -> str:
        """Who the session authenticates as, for messages (never a password)."""
        ids = [f"sasl:{self.sasl.user}"] if self.sasl else []
        ids += [f"digest:{self.digest.user}"] if self.digest else []
        return ", ".join(ids) or "nobody (unauthenticated)"

    @classmethod
    def from_settings(
        cls, config: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None, where: str = ""
    ) -> ZkSecurity:
        """From configuration keys (:data:`KEYS`), each else from its environment variable. ``where`` names the
        configuration in messages."""
        config, environ = config or {}, os.environ if environ is None else environ

        def setting(key: str) -> tuple[str, str]:
            value = config.get(key, "").strip()
            if value:
                return value, f"{key}{where}"
            return environ.get(ENVIRONMENT[key], "").strip(), ENVIRONMENT[key]

        enable, enable_from = setting(ENABLE_SECURITY)
        if enable.lower() not in ("", "true", "false"):
            raise InvalidArgument(f"{enable_from}={enable!r}: expected true or false")
        digest_file, _ = setting(DIGEST_AUTH_FILE)
        jaas_file, _ = setting(JAAS_CONFIG)
        section = setting(JAAS_SECTION)[0] or "Client"
        security = cls(
            enable_security=enable.lower() == "true",
            digest=read_digest_file(digest_file) if digest_file else None,
            sasl=read_jaas_login(jaas_file, section) if jaas_file else None,
        )
        if security.enable_security and not security.authenticated:
            # ZooKeeper refuses CREATOR_ALL_ACL from an unauthenticated session (InvalidACL): say what is missing
            raise InvalidArgument(
                f"{enable_from}=true needs ZooKeeper credentials: set {DIGEST_AUTH_FILE} (a file holding user:password)"
                f" or {JAAS_CONFIG} (a JAAS file with a {section} section), or {ENVIRONMENT[DIGEST_AUTH_FILE]} / "
                f"{ENVIRONMENT[JAAS_CONFIG]}"
            )
        return security

    def kazoo_options(self) -> dict[str, Any]:
        """Keyword arguments of ``KazooClient`` for this security: authentication, and the ACL of what it creates."""
        from kazoo.security import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE

        options: dict[str, Any] = {"default_acl": CREATOR_ALL_ACL if self.enable_security else OPEN_ACL_UNSAFE}
        if self.digest is not None:
            options["auth_data"] = [("digest", f"{self.digest.user}:{self.digest.password}")]
        if self.sasl is not None:
            options["sasl_options"] = {
                "mechanism": "DIGEST-MD5",
                "username": self.sasl.user,
                "password": self.sasl.password,
            }
        return options


def read_digest_file(path: str) -> Credentials:
    """``user:password`` on the first line of a private file (the argument of ZooKeeper's ``addauth digest``)."""
    what = "ZooKeeper digest credentials file"
    line = read_secret_file(path, what).decode("utf-8", "replace").splitlines()[:1]
    user, sep, password = (line[0] if line else "").partition(":")
    if not sep or not user.strip() or not password:
        raise InvalidArgument(f"{what} {path}: its first line must be user:password")
    return Credentials(user.strip(), password)


def read_jaas_login(path: str, section: str = "Client") -> Credentials:
    """The username and password of the DigestLoginModule in ``section`` of a private JAAS file."""
    what = "JAAS configuration file"
    raw = read_secret_file(path, what).decode("utf-8", "replace")
    text = _JAAS_TOKENS.sub(lambda m: m.group() if m.group().startswith('"') else " ", raw)
    sections = dict(_JAAS_SECTION.findall(text))
    if section not in sections:
        found = ", ".join(sorted(sections)) or "none"
        raise InvalidArgument(f"{what} {path} has no {section} section (sections: {found})")
    body = sections[section].strip()
    module = body.split(None, 1)[0] if body else ""
    if module != DIGEST_LOGIN_MODULE:
        # Kerberos (Krb5LoginModule, SASL GSSAPI) needs a ticket cache this client does not manage
        raise InvalidArgument(
            f"{what} {path}: the {section} section's login module {module or '(none)'} is not supported: "
            f"use {DIGEST_LOGIN_MODULE} (SASL DIGEST-MD5), or {DIGEST_AUTH_FILE}"
        )
    options = {key: quoted if quoted else bare for key, quoted, bare in _JAAS_OPTION.findall(body)}
    if not options.get("username") or not options.get("password"):
        raise InvalidArgument(f"{what} {path}: the {section} section needs username and password")
    return Credentials(options["username"], re.sub(r"\\(.)", r"\1", options["password"]))  # JAAS's \" and \\
