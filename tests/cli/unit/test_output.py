"""The output contract, over the whole command tree: every command takes -o json|yaml (what each then prints, on a
real cluster, is checked by tests/cli/cluster/test_output.py).
"""

from __future__ import annotations

import click
import pytest

from support.cli import WITHOUT_OUTPUT_OPTION, command_tree

LEAVES = {path: command for path, command in command_tree().items() if not isinstance(command, click.Group)}


def output_choices(command: click.Command) -> list[str] | None:
    for param in command.params:
        if "--output" in getattr(param, "opts", ()):
            return list(param.type.choices)
    return None


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_every_command_takes_output_json_and_yaml(path):
    choices = output_choices(LEAVES[path])
    if path in WITHOUT_OUTPUT_OPTION:
        assert choices is None, f"{path} takes -o: take it off the exceptions"
    else:
        assert choices is not None and {"json", "yaml"} <= set(choices), f"bkctl {' '.join(path)} has no -o json"
