"""Run bkctl in-process, as a user would type it, and look at exit code, stdout and stderr separately."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bkctl.cli import cli


@pytest.fixture
def bkctl():
    runner = CliRunner()

    def run(*args: str, input: str | None = None):
        return runner.invoke(cli, list(args), input=input, catch_exceptions=False)

    return run
