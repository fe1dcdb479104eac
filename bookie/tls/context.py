"""One side's ``ssl`` context built from its settings and material, and :class:`Tls`, which keeps it current as the
files change (``tlsCertFilesRefreshDurationSeconds``)."""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time

from bookie.errors import InvalidArgument
from bookie.tls.keys import Material, read_material
from bookie.tls.settings import PROTOCOLS, Side, TlsSettings

log = logging.getLogger(__name__)


def _load_chain(context: ssl.SSLContext, key: bytes, chain: bytes) -> None:
    """``load_cert_chain`` from memory: ssl reads only files, so the key goes through an anonymous memory file
    (never a file on disk, where it could be left behind)."""
    fd = os.memfd_create("bkctl-tls", os.MFD_CLOEXEC)
    try:
        data = memoryview(chain + key)
        while data:
            data = data[os.write(fd, data) :]
        context.load_cert_chain(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)


def ssl_context(settings: TlsSettings, material: Material, side: Side) -> ssl.SSLContext:
    if side == "server":
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.verify_mode = ssl.CERT_REQUIRED if settings.client_authentication else ssl.CERT_NONE
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = settings.hostname_verification
        context.verify_mode = ssl.CERT_REQUIRED
    if material.key is not None and material.chain is not None:
        _load_chain(context, material.key, material.chain)
    if material.trusted is not None:
        context.load_verify_locations(cadata=material.trusted.decode("ascii"))
    versions = sorted(PROTOCOLS[p.strip()] for p in (settings.protocols or "").split(",") if p.strip())
    if versions:
        context.minimum_version, context.maximum_version = versions[0], versions[-1]
    return context


class Tls:
    """One side's TLS, kept current: the ssl context (and material for gRPC) built from the settings, rebuilt when
    ``tlsCertFilesRefreshDurationSeconds`` has passed since the last check and a file's modification time changed
    (as TLSContextFactory.getSSLContext). A reload that fails keeps the last good context and is logged."""

    def __init__(self, settings: TlsSettings, side: Side) -> None:
        self.settings = settings
        self.side = side
        self._lock = threading.Lock()
        self._checked = time.monotonic()
        self._stamps = self._mtimes()
        self.material = read_material(settings, side)
        self._context = ssl_context(settings, self.material, side)
        self.generation = 0  # counts reloads (gRPC asks whether its configuration changed)

    def _mtimes(self) -> list[int | None]:
        stamps: list[int | None] = []
        for name in self.settings.files:
            try:
                stamps.append(os.stat(name).st_mtime_ns)
            except OSError:
                stamps.append(None)
        return stamps

    def refresh(self) -> None:
        """Reload if it is time to look and a file changed."""
        every = self.settings.refresh_seconds
        if every <= 0 or time.monotonic() < self._checked + every:
            return
        with self._lock:
            self._checked = time.monotonic()
            stamps = self._mtimes()
            if stamps == self._stamps:
                return
            self._stamps = stamps
            try:
                material = read_material(self.settings, self.side)
                context = ssl_context(self.settings, material, self.side)
            except (InvalidArgument, ssl.SSLError, OSError) as exc:
                log.warning("TLS files changed but could not be reloaded (keeping the last ones): %s", exc)
                return
            self.material, self._context = material, context
            self.generation += 1
            log.info("TLS certificates reloaded from %s", ", ".join(self.settings.files))

    def context(self) -> ssl.SSLContext:
        """The context for a connection starting now."""
        self.refresh()
        return self._context
