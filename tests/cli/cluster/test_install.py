"""bkctl as pip installs it, from a wheel built from this tree (not the editable install the tests run from).

The wheel puts the man pages where `man bkctl` finds them (<prefix>/share/man/man1). The base install, without
extras, has neither PySpark nor pyarrow and runs a bookie, the client and the admin commands; `ledger export`
says in one line which extra to install, `sandbox start` where to get a ZooKeeper when the host has none. Takes
~20 s: pip installs the base dependencies into a new virtualenv (from its cache or the package index).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

from bookie.local.bookies import LocalBookie, wait_registered
from bookie.local.process import spawn, stop_process_group, tail

REPO = Path(__file__).resolve().parents[3]
MAN_PAGES = sorted(p.name for p in (REPO / "man").glob("*.1"))


def pip_env() -> dict[str, str]:
    """The environment, but pip's own configuration: the test's XDG_CONFIG_HOME would hide the user's pip.conf."""
    return {k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"}


_BUILT: list[Path] = []  # the wheel, built once per process (xdist may set module fixtures up twice)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if _BUILT:
        return _BUILT[0]
    out = tmp_path_factory.mktemp("wheel")
    # From a copy of the tree: setuptools builds in the source's build/, which another build (a second setup of
    # this fixture, the editable install) may be using ("File exists: build/bdist.linux-x86_64/wheel/...")
    source = tmp_path_factory.mktemp("source") / "bkctl"
    skip = (".venv", ".git", "build", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis", "*.so")
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*skip))
    # --no-build-isolation: the test environment's setuptools builds it, with no download of one for the build
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        env=pip_env(),
        timeout=300,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, f"pip wheel failed:\n{built.stdout[-2000:]}\n{built.stderr[-3000:]}"
    (built,) = out.glob("bkctl-*.whl")
    _BUILT.append(built)
    return built


@pytest.fixture(scope="module")
def base(wheel, tmp_path_factory) -> Path:
    """A virtualenv with `pip install bkctl` (no extras): its bin directory."""
    venv = tmp_path_factory.mktemp("base") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        env=pip_env(),
        timeout=600,
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, f"pip install failed:\n{installed.stderr[-3000:]}"
    return venv / "bin"


def test_the_wheel_installs_every_man_page_into_share_man(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert sorted(n.rsplit("/", 1)[1] for n in names if ".data/data/share/man/man1/" in n) == MAN_PAGES
    assert len(MAN_PAGES) == 13  # bkctl, one page per noun, and top (a command of its own)


def test_the_base_install_has_the_man_pages_and_neither_pyspark_nor_pyarrow(base):
    assert sorted(p.name for p in (base.parent / "share" / "man" / "man1").glob("*.1")) == MAN_PAGES
    probe = "import importlib.util as u; print(u.find_spec('pyspark'), u.find_spec('pyarrow'), u.find_spec('bkctl'))"
    found = subprocess.run(
        [str(base / "python"), "-c", probe], capture_output=True, text=True, check=True, cwd=base
    ).stdout  # not the source tree's directory: its bkctl/ would be found first
    assert found.startswith("None None ModuleSpec(name='bkctl'") and str(base.parent) in found


def bkctl(base: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(base / "bkctl"), *args], capture_output=True, text=True, timeout=60, cwd=base, env=env)


def test_a_command_whose_extra_is_missing_says_what_to_install(base, service_uri):
    result = bkctl(base, "-u", service_uri, "ledger", "export", "1", "--to", "/nonexistent/out")
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        "error: bkctl ledger export needs bkctl[export] (pyspark and pyarrow not installed): "
        "pip install 'bkctl[export]'\n",
    )


def test_the_sandbox_without_a_zookeeper_says_where_to_get_one(base, tmp_path):
    """The base install has no PySpark: the sandbox runs the host's ZooKeeper (ZOOKEEPER_PATH's first), and says in
    one line where to get one when there is none."""
    from bookie.local.zookeeper import HOST_INSTALLS, HOST_JARS, NO_ZOOKEEPER

    empty = tmp_path / "zookeeper"
    empty.mkdir()
    state = ["sandbox", "start", "--dir", str(tmp_path / "sandbox")]
    result = bkctl(base, *state, env={**os.environ, "ZOOKEEPER_PATH": str(empty)})
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        f"error: ZOOKEEPER_PATH={empty} holds no zookeeper-*.jar (at its top, in lib/ or build/)\n",
    )
    assert not (tmp_path / "sandbox").exists()
    if any(jar.exists() for jar in HOST_JARS + HOST_INSTALLS):
        return  # this host has a ZooKeeper: test_local_zookeeper.py checks the line without one
    unset = {k: v for k, v in os.environ.items() if k != "ZOOKEEPER_PATH"}  # tests/conftest.py sets it to PySpark's
    try:
        result = bkctl(base, *state, env=unset)
        assert (result.returncode, result.stdout, result.stderr) == (1, "", f"error: {NO_ZOOKEEPER}\n")
    finally:
        if (tmp_path / "sandbox").exists():  # started after all: stopped, not left running
            bkctl(base, "sandbox", "stop", "--dir", str(tmp_path / "sandbox"))


def test_the_base_install_runs_a_bookie_the_client_and_the_help(base, cluster, service_uri, tmp_path):
    for args in (["--help"], ["bookie", "run", "--help"], ["ledger", "export", "--help"]):
        result = bkctl(base, *args)
        assert (result.returncode, result.stderr) == (0, ""), args
    bookie = LocalBookie.create(1, tmp_path / "bookie", service_uri, http=True)
    bookie.pid = spawn(
        [str(base / "bkctl"), "bookie", "run", "--conf", str(bookie.conf_path)], bookie.log_path, cwd=base
    )
    try:
        wait_registered(cluster, [bookie])
        with urllib.request.urlopen(f"http://127.0.0.1:{bookie.http_port}/api/v1/bookie/is_ready", timeout=10) as r:
            assert r.status == 200
        result = bkctl(base, "-u", service_uri, "ledger", "simpletest", "-e", "1", "-w", "1", "-a", "1", "-n", "20")
        assert result.returncode == 0, result.stderr
        result = bkctl(base, "-u", service_uri, "bookie", "gc", bookie.bookie_id, "--wait")
        assert result.returncode == 0, result.stderr
    except BaseException:
        print(tail(bookie.log_path, 40))
        raise
    finally:
        stop_process_group(bookie.pid)
