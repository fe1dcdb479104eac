import importlib.metadata

import bkctl


def test_the_version_is_written_once():
    """pyproject.toml's version is dynamic, read from bkctl/__init__.py: the installed distribution says the same."""
    assert importlib.metadata.version("bkctl") == bkctl.__version__
