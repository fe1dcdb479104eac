"""tests/cli/unit: commands that need no cluster (help, usage errors, completion of the tree, contexts, offline
files); tests/cli/cluster: commands run against real bookies on the session's ZooKeeper (tests/conftest.py TIERS)."""

import os
from pathlib import Path

import pytest


@pytest.fixture
def config_file() -> Path:
    """bkctl's contexts file, under the test's own XDG_CONFIG_HOME (tests/conftest.py's isolation fixture)."""
    return Path(os.environ["XDG_CONFIG_HOME"]) / "bkctl" / "config.yaml"
