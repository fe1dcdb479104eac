"""Who may do what on a bookie: BookKeeper's certificate-role authorizer, and our admin role.

BookKeeper (``tls/BookieAuthZFactory.java``, ``proto/AuthHandler.java``): with
``bookieAuthProviderFactoryClass=org.apache.bookkeeper.tls.BookieAuthZFactory`` a connection is authenticated only
once its TLS handshake is done, by the client certificate's role: the first role of the code-0 part of the
subject's OU (``OU=0:role[,role...][;1:cluster]``, bookie.tls.roles_from_ou) must be one of ``authorizedRoles``, and
names the principal. Until then (a plaintext connection, a certificate without such a role) every request is
refused: EUA for v3 requests and v2 adds and reads, the connection closed for other v2 requests. An AUTH request
naming another plugin closes the connection; one naming BookieAuthZFactory is never answered (its ``process`` does
nothing). Without the factory (BookKeeper's default) everyone is authenticated at once and the rest of this module
allows everything, as BookKeeper does.

Where we go further: BookKeeper gives no role more rights than another. Here, with the authorizer on, the admin
operations (read-only mode, GC, compaction, decommission and recovery, deleting ledgers over HTTP: anything that
changes a bookie or the cluster) need a principal whose role is one of ``bkctlAdminRoles`` (ours), on every transport
we serve: the gRPC admin service and the HTTP admin API. Reading is BookKeeper's: an authorized role reads any
ledger. Our opt-in ``bkctlReadRequiresMasterKey`` serves a principal without an admin role a ledger's entries, LAC or
entry list only on a connection that showed the ledger's master key (an add, a fencing read, a WRITE_LAC, or a v3
read carrying the key). No BookKeeper client sends the key on a plain read, nor does ours, so with it on such a role
reads a ledger only on the connection that wrote or recovered it: the Java client's (a Pulsar broker's) reads of
closed ledgers and bkctl's ``ledger read`` from a new process are refused (EUA).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from bookie.errors import InvalidArgument
from bookie.tls import roles_from_ou

log = logging.getLogger(__name__)

AUTH_DISABLED_PLUGIN = "AuthDisabledPlugin"
BOOKIE_AUTHZ_FACTORY = "org.apache.bookkeeper.tls.BookieAuthZFactory"
BOOKIE_AUTHZ_PLUGIN = "BookieAuthZFactory"  # its getPluginName()


def _roles(text: str) -> tuple[str, ...]:
    """A list key as Commons Configuration's getStringArray reads it: split at commas, each trimmed."""
    return tuple(role.strip() for role in text.split(",")) if text.strip() else ()


@dataclass(frozen=True)
class Authorizer:
    enabled: bool = False  # BookieAuthZFactory configured
    authorized_roles: tuple[str, ...] = ()
    admin_roles: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, factory: str, authorized_roles: str, admin_roles: str) -> Authorizer:
        if not factory.strip():
            return cls()
        roles = _roles(authorized_roles)
        if not roles or "" in roles:  # BookieAuthZFactory.init
            raise InvalidArgument(
                "Configuration option 'bookieAuthProviderFactoryClass' is set to 'BookieAuthZFactory' but no roles "
                "set for configuration field 'authorizedRoles'."
            )
        return cls(True, roles, _roles(admin_roles))

    @property
    def plugin(self) -> str:
        """The auth plugin name a client's AUTH message must carry."""
        return BOOKIE_AUTHZ_PLUGIN if self.enabled else AUTH_DISABLED_PLUGIN

    def principal(self, ou: str | None, peer: str) -> str | None:
        """BookieAuthZFactory's ``onProtocolUpgrade``: the principal of a client certificate's OU, or None (logged,
        with BookKeeper's words) when it has no authorized role."""
        roles = roles_from_ou(ou)
        if not roles:
            log.error(
                "AuthZ failed: No cert role in OU field of certificate. Must have a role from allowedRoles list %s "
                "host: %s",
                list(self.authorized_roles),
                peer,
            )
            return None
        if roles[0] not in self.authorized_roles:
            log.error(
                "AuthZ failed: Cert role %s doesn't match allowedRoles list %s; host: %s",
                roles,
                list(self.authorized_roles),
                peer,
            )
            return None
        return roles[0]

    def is_admin(self, principal: str | None) -> bool:
        """May this principal run admin operations (and read any ledger with bkctlReadRequiresMasterKey)? Everyone
        may when the authorizer is off (BookKeeper's model)."""
        return not self.enabled or (principal is not None and principal in self.admin_roles)

    def admin_refusal(self, principal: str | None, how: str) -> str | None:
        """Why an admin operation over ``how`` is refused to ``principal`` (None: allowed), in one line."""
        if self.is_admin(principal):
            return None
        if principal is None:
            return (
                f"admin operations on this bookie need a client certificate with an admin role ({how}); "
                "none was presented"
            )
        admin = ", ".join(self.admin_roles) or "none: set bkctlAdminRoles"
        return f"role {principal!r} may not run admin operations on this bookie (admin roles: {admin})"
