"""Contexts, as kubectl's: named clusters in ``$XDG_CONFIG_HOME/bkctl/config.yaml`` (``~/.config/bkctl/config.yaml``),
one of them current. The file::

    current-context: prod
    contexts:
      prod:
        service-uri: zk+hierarchical://zk1:2181;zk2:2181/ledgers
        http-port: 8080          # optional: the bookies' HTTP admin port (as --http-port)
        timeout: 5               # optional: seconds to wait for ZooKeeper (as --timeout)
        tls-trust-store: /etc/bkctl/ca.pem     # optional: TLS to the bookies, as bkctl --tls-trust-store ...
        tls-cert: /etc/bkctl/admin.pem         # ... --tls-cert
        tls-key: /etc/bkctl/admin-key.pem      # ... --tls-key
        tls-key-password-file: /etc/bkctl/pw   # ... --tls-key-password-file
        tls-hostname-verification: true        # ... --tls-hostname-verification

A context is a mapping of named settings. A key this bkctl does not know is refused, not ignored: an older bkctl
must not connect without a setting written for it (a context with TLS must not reach its bookies in the clear).
A context names the files of its TLS material, never the secrets themselves.

The file is private (0600, in a 0700 directory) and replaced atomically under a lock, so two commands editing it
at once both land and a crash leaves the old file or the new one.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bookie.errors import InvalidArgument, NotFound
from bookie.files import write_private

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:-]{0,127}")
NAME_RULE = "letters, digits and _.@:- (up to 128), starting with a letter or digit"
MAX_TIMEOUT = 86400  # seconds, of --timeout and a context's timeout: a day; more is a typo (and overflows waits)
HEADER = "# bkctl contexts: edit with `bkctl config set-context / use-context / delete-context`\n"


def config_path() -> Path:
    """``$XDG_CONFIG_HOME/bkctl/config.yaml``, else ``~/.config/bkctl/config.yaml`` (a relative XDG_CONFIG_HOME
    is ignored, as the XDG specification says)."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    return root / "bkctl" / "config.yaml"


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise InvalidArgument(f"bad context name {name!r}: {NAME_RULE}")
    return name


@dataclass
class Context:
    name: str
    service_uri: str
    http_port: int | None = None
    timeout: float | None = None
    tls_trust_store: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_key_password_file: str | None = None
    tls_hostname_verification: bool | None = None

    def doc(self) -> dict:
        """The context as its file entry (the keys of the file, unset ones left out)."""
        doc = {key: getattr(self, key.replace("-", "_")) for key in KEYS}
        return {k: v for k, v in doc.items() if v is not None}

    def tls_settings(self):
        """The context's TLS to the bookies (bookie.tls.TlsSettings), or None."""
        from bookie.tls import client_settings

        return client_settings(
            self.tls_trust_store,
            self.tls_cert,
            self.tls_key,
            self.tls_key_password_file,
            bool(self.tls_hostname_verification),
        )


def _port(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise InvalidArgument(f"{where}: http-port {value!r} is not a port (1-65535)")
    return value


def _timeout(value, where: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 < value <= MAX_TIMEOUT
    ):
        raise InvalidArgument(f"{where}: timeout {value!r} is not a number of seconds (0 < S <= {MAX_TIMEOUT})")
    return value


def _service_uri(value, where: str) -> str:
    from bookie.meta.uri import parse_service_uri

    if not isinstance(value, str):
        raise InvalidArgument(f"{where}: service-uri {value!r} is not a string")
    try:
        parse_service_uri(value)
    except InvalidArgument as exc:
        raise InvalidArgument(f"{where}: {exc}") from None
    return value


def _path(key: str) -> Callable:
    def check(value, where: str) -> str:
        if not isinstance(value, str) or not os.path.isabs(value):
            raise InvalidArgument(f"{where}: {key} {value!r} is not an absolute path")
        return value

    return check


def _bool(value, where: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(f"{where}: tls-hostname-verification {value!r} is not true or false")
    return value


# The keys of a context and how each is checked; the dataclass field is the key with '_' for '-'.
KEYS: dict[str, Callable] = {
    "service-uri": _service_uri,
    "http-port": _port,
    "timeout": _timeout,
    "tls-trust-store": _path("tls-trust-store"),
    "tls-cert": _path("tls-cert"),
    "tls-key": _path("tls-key"),
    "tls-key-password-file": _path("tls-key-password-file"),
    "tls-hostname-verification": _bool,
}


def parse_context(name: str, entry, where: str) -> Context:
    where = f"{where}: context {name!r}"
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise InvalidArgument(f"{where}: not a context name: {NAME_RULE}")
    if not isinstance(entry, dict):
        raise InvalidArgument(f"{where}: not a mapping of settings")
    unknown = sorted(str(k) for k in entry if k not in KEYS)
    if unknown:
        raise InvalidArgument(f"{where}: unknown key {unknown[0]!r} (this bkctl knows {', '.join(KEYS)})")
    if entry.get("service-uri") is None:
        raise InvalidArgument(f"{where}: no service-uri")
    return Context(
        name,
        **{
            key.replace("-", "_"): check(entry[key], where) for key, check in KEYS.items() if entry.get(key) is not None
        },
    )


@dataclass
class ContextFile:
    path: Path
    current: str | None = None
    contexts: dict[str, Context] = field(default_factory=dict)

    def get(self, name: str) -> Context:
        if name not in self.contexts:
            raise NotFound(f"no context {name!r} in {self.path} (`bkctl config get-contexts` lists them)")
        return self.contexts[name]

    def text(self) -> str:
        import yaml

        doc = {
            "current-context": self.current,
            "contexts": {name: c.doc() for name, c in sorted(self.contexts.items())},
        }
        return HEADER + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)

    def save(self) -> None:
        """Replace the file atomically: a private temporary file, fsynced, renamed over it, the directory fsynced."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_private(self.path, self.text().encode(), sync=True)


def _read(path: Path, warn: Callable[[str], None]) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InvalidArgument(f"{path}: cannot read it: {exc.strerror}") from None
    with os.fdopen(fd, encoding="utf-8") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InvalidArgument(f"{path}: not a regular file")
        if mode & 0o077:
            # Fixed rather than refused: the file names clusters (and will hold TLS settings); what matters is that
            # it is private from now on, and the operator learns it was not.
            try:
                os.fchmod(fd, 0o600)
            except OSError as exc:
                raise InvalidArgument(
                    f"{path}: readable by others (mode {stat.S_IMODE(mode):04o}) and cannot be "
                    f"made private: {exc.strerror}"
                ) from None
            warn(f"{path} was readable by others (mode {stat.S_IMODE(mode):04o}): made private (0600)")
        try:
            return f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidArgument(f"{path}: cannot read it: {exc}") from None


def _unique_keys_loader():
    """PyYAML's SafeLoader, refusing a mapping that has a key twice: YAML requires unique keys, and PyYAML would keep
    the last silently (a context pasted twice under one name would drop the first)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                first: dict = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` may be overridden, as YAML says
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        seen = key in first
                    except TypeError:  # an unhashable key: SafeLoader's own error says so
                        continue
                    if seen:
                        raise yaml.constructor.ConstructorError(
                            None,
                            None,
                            f"duplicate key {key!r} (first at line {first[key] + 1})",
                            key_node.start_mark,
                        )
                    first[key] = key_node.start_mark.line
            return super().construct_mapping(node, deep)

    return UniqueKeyLoader


def load(path: Path | None = None, warn: Callable[[str], None] = lambda message: None) -> ContextFile:
    """The contexts file (empty when there is none); a malformed one is :class:`InvalidArgument` in one line."""
    import yaml

    path = path or config_path()
    text = _read(path, warn)
    if text is None:
        return ContextFile(path)
    try:
        doc = yaml.load(text, Loader=_unique_keys_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InvalidArgument(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
    if doc is None:
        return ContextFile(path)
    if not isinstance(doc, dict):
        raise InvalidArgument(f"{path}: not a mapping of current-context and contexts")
    unknown = sorted(str(k) for k in doc if k not in ("current-context", "contexts"))
    if unknown:
        raise InvalidArgument(f"{path}: unknown key {unknown[0]!r} (this bkctl knows current-context, contexts)")
    entries = {} if doc.get("contexts") is None else doc["contexts"]
    if not isinstance(entries, dict):
        raise InvalidArgument(f"{path}: contexts is not a mapping of names to settings")
    contexts = {name: parse_context(name, entry, str(path)) for name, entry in entries.items()}
    current = doc.get("current-context")
    if current is not None and current not in contexts:
        raise InvalidArgument(f"{path}: current-context {current!r} names no context in the file")
    return ContextFile(path, current, contexts)


@contextlib.contextmanager
def editing(warn: Callable[[str], None] = lambda message: None, save: bool = True) -> Iterator[ContextFile]:
    """The contexts file, read under an exclusive lock and saved (if ``save``) when the block ends without an
    error."""
    path = config_path()
    if not save:  # a dry run: not even the directory is created
        yield load(path, warn)
        return
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    lock = os.open(path.parent / ".config.yaml.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        contexts = load(path, warn)
        yield contexts
        if save:
            contexts.save()
    finally:
        os.close(lock)
