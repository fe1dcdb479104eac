"""``bkctl completion SHELL``: click's completion script, with bash given the line as typed.

bash cuts the words it hands a completion function at the characters of COMP_WORDBREAKS, ':' among them, so a
bookie id ``host:port`` reaches click as three words and completes to nothing once its colon is typed. Our bash
script also passes the line up to the cursor and bash's current word: click completes the whole word, and the
answer is cut to what bash replaces (what bash-completion's ``__ltrim_colon_completions`` does). Without them it
is click's bash completion.
"""

import os

import click
from click.shell_completion import BashComplete, add_completion_class, split_arg_string

LINE, WORD = "BKCTL_COMP_LINE", "BKCTL_COMP_WORD"
CLICK_CALL = "COMP_CWORD=$COMP_CWORD"


class Bash(BashComplete):
    incomplete: str | None = None  # the word being completed, whole (only when the script passed the line)
    source_template = BashComplete.source_template.replace(
        CLICK_CALL, f'{CLICK_CALL} {LINE}="${{COMP_LINE:0:COMP_POINT}}" {WORD}="${{COMP_WORDS[COMP_CWORD]}}"'
    )

    def get_completion_args(self) -> tuple[list[str], str]:
        line = os.environ.get(LINE)
        if line is None:
            return super().get_completion_args()
        words = split_arg_string(line)
        self.incomplete = "" if not line or line[-1].isspace() or not words else words.pop()
        return words[1:], self.incomplete

    def format_completion(self, item) -> str:
        word = os.environ.get(WORD)
        incomplete = self.incomplete
        if item.type == "plain" and word is not None and incomplete is not None and incomplete.endswith(word):
            before = incomplete[: len(incomplete) - len(word)]  # typed, but in words bash keeps as they are
            value = item.value
            if incomplete.startswith("-") and "=" in incomplete and not value.startswith(before):
                value = incomplete.partition("=")[0] + "=" + value  # --opt=VALUE: click completed VALUE
            if value.startswith(before):
                item.value = value[len(before) :]
        return super().format_completion(item)


add_completion_class(Bash, "bash")


@click.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(ctx, shell: str):
    """Print a shell completion script; load it with `eval "$(bkctl completion bash)"`

    Completes commands, options, file names, and the bookie ids and ledger ids of the cluster the command line
    names (read from ZooKeeper within a second; nothing when it cannot be reached).
    """
    from click.shell_completion import get_completion_class

    root = ctx.find_root()
    shell_complete = get_completion_class(shell)
    assert shell_complete is not None  # click.Choice lets through only shells click completes
    script = shell_complete(root.command, {}, "bkctl", "_BKCTL_COMPLETE").source()
    click.echo(script)
