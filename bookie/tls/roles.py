"""The roles a certificate carries in its OU, as BookKeeper reads them (``util/CertUtils.java``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

OU_ROLE_CODE = "0"
_OU_PART = re.compile(r"^([0-9]+):(.*)$")


def roles_from_ou(ou: str | None) -> list[str] | None:
    """``CertUtils.getRolesFromOU``: the OU is ``code:value`` parts separated by ``;``; code 0 lists the roles,
    separated by ``,``. None without a role part. (A part that does not start with its code, e.g. after a
    space, is skipped, as Java's regular expression skips it.)"""
    parts: dict[str, str] = {}
    for part in (ou or "").split(";"):
        match = _OU_PART.match(part)
        if match:
            parts[match.group(1).strip()] = match.group(2).strip()
    names = parts.get(OU_ROLE_CODE)
    if names is None:
        return None
    roles = [role.strip() for role in re.split(",", names)]
    while len(roles) > 1 and roles[-1] == "":  # String.split drops trailing empty strings
        roles.pop()
    return roles


def ou_of_subject(rdns: Iterable[Iterable[tuple[str, str]]]) -> str | None:
    """The first OU of a subject in its encoded order (``CertUtils.getOUString``: LdapName's RDNs, right to left
    of the RFC 2253 name, are the certificate's order), from ``SSLSocket.getpeercert()['subject']``."""
    for rdn in rdns:
        for name, value in rdn:
            if name == "organizationalUnitName":
                return value
    return None


def ou_of_pem(pem: bytes) -> str | None:
    """The same, of a PEM certificate (what gRPC gives of its peer)."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    cert = x509.load_pem_x509_certificate(pem)
    for attribute in cert.subject:
        if attribute.oid == NameOID.ORGANIZATIONAL_UNIT_NAME:
            value = attribute.value
            return value if isinstance(value, str) else value.decode()
    return None
