"""What the interop modules share: ``store``, a metadata store on the Java cluster of the module's ``java`` fixture."""

import pytest

from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri


@pytest.fixture(scope="module")
def store(java):
    with MetadataStore(parse_service_uri(java.service_uri)) as s:
        yield s
