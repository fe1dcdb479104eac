"""TLS as Apache BookKeeper configures it (``tls/TLSContextFactory.java``, 4.17.4), for bookies and clients alike,
one concern per module:

- :mod:`bookie.tls.settings`: the configuration keys (``tls*``, a client's ``client*``) and a client's settings from
  file paths;
- :mod:`bookie.tls.keys`: the key, certificate chain and trusted certificates read from PEM or PKCS12 files;
- :mod:`bookie.tls.context`: the ``ssl`` context of a side, reloaded when its files change;
- :mod:`bookie.tls.roles`: the roles a certificate carries (``util/CertUtils.java``).
"""

from bookie.tls.context import Tls, ssl_context
from bookie.tls.keys import Material, read_material
from bookie.tls.roles import ou_of_pem, ou_of_subject, roles_from_ou
from bookie.tls.settings import KEYS, TLS_CONTEXT_FACTORY, TlsSettings, client_settings

__all__ = [
    "KEYS",
    "TLS_CONTEXT_FACTORY",
    "Material",
    "Tls",
    "TlsSettings",
    "client_settings",
    "ou_of_pem",
    "ou_of_subject",
    "read_material",
    "roles_from_ou",
    "ssl_context",
]
