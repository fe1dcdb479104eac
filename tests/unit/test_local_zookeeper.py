"""Which ZooKeeper the sandbox runs: ZOOKEEPER_PATH, else the host's, else PySpark's jars."""

from pathlib import Path

import pytest

from bookie.errors import BKError
from bookie.local.zookeeper import NO_ZOOKEEPER, choose_classpath


def jars(directory: Path, *names: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_bytes(b"PK")
    return directory


@pytest.fixture
def host(tmp_path):
    """A host with Debian's package (a jar whose manifest names the rest), a release in an installation directory,
    and PySpark's jars."""
    debian = jars(tmp_path / "usr/share/java", "zookeeper.jar", "zookeeper-jute.jar") / "zookeeper.jar"
    release = jars(tmp_path / "opt/zookeeper/lib", "zookeeper-3.9.3.jar", "netty-handler-4.1.jar").parent
    pyspark = jars(tmp_path / "pyspark/jars", "zookeeper-3.9.3.jar", "spark-core_2.13-4.0.0.jar")
    return debian, release, pyspark


def test_zookeeper_path_first_then_the_host_then_pyspark(host, tmp_path):
    debian, release, pyspark = host
    assert choose_classpath(str(release), pyspark, (debian,), ()) == f"{release / 'lib'}/*"
    assert choose_classpath(None, pyspark, (debian,), (release,)) == str(debian)
    jars(debian.parent, "slf4j-simple.jar")
    assert choose_classpath(None, pyspark, (debian,), ()) == f"{debian}:{debian.parent / 'slf4j-simple.jar'}"
    assert choose_classpath(None, pyspark, (tmp_path / "absent.jar",), (release,)) == f"{release / 'lib'}/*"
    assert choose_classpath(None, pyspark, (tmp_path / "absent.jar",), (tmp_path / "absent",)) == f"{pyspark}/*"


def test_installations_as_kazoos_harness_reads_zookeeper_path(tmp_path):
    old_release = jars(tmp_path / "zk-3.4", "zookeeper-3.4.14.jar")
    jars(old_release / "lib", "slf4j-api-1.7.jar")
    assert choose_classpath(str(old_release), None) == f"{old_release}/*:{old_release / 'lib'}/*"
    source_build = jars(tmp_path / "zk-src/build", "zookeeper-3.4.14.jar").parent
    jars(source_build / "build/lib", "jline.jar")
    assert choose_classpath(str(source_build), None) == f"{source_build / 'build'}/*:{source_build / 'build/lib'}/*"


def test_a_zookeeper_path_without_zookeeper_is_named_not_passed_over(host, tmp_path):
    debian, _, pyspark = host
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(BKError, match=rf"^ZOOKEEPER_PATH={empty} holds no zookeeper-\*\.jar"):
        choose_classpath(str(empty), pyspark, (debian,), ())


def test_neither_on_the_host_nor_pyspark_says_where_to_get_one(tmp_path):
    no_zookeeper = jars(tmp_path / "pyspark/jars", "spark-core_2.13-4.0.0.jar")
    for pyspark in (None, no_zookeeper):
        with pytest.raises(BKError) as raised:
            choose_classpath(None, pyspark, (tmp_path / "zookeeper.jar",), (tmp_path / "zookeeper",))
        assert str(raised.value) == NO_ZOOKEEPER
    assert NO_ZOOKEEPER == (
        "no ZooKeeper on this host: install one (Debian, Ubuntu: apt-get install zookeeper), set ZOOKEEPER_PATH to "
        "a ZooKeeper installation, or pip install 'bkctl[sandbox]' (PySpark's jars carry one)"
    )
