"""What the interop modules share: ``store``, a metadata store on the Java cluster of the module's ``java`` fixture,
and ``classes``, tests/interop/java/InteropClient.java compiled once."""

from pathlib import Path

import pytest

from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

from interop.oracle import compile_java


@pytest.fixture(scope="session")
def classes(tmp_path_factory):
    return compile_java(Path(__file__).with_name("java") / "InteropClient.java", tmp_path_factory.mktemp("classes"))


@pytest.fixture(scope="module")
def store(java):
    with MetadataStore(parse_service_uri(java.service_uri)) as s:
        yield s
