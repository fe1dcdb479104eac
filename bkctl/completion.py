import click


@click.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(ctx, shell: str):
    """Print a shell completion script; load it with `eval "$(bkctl completion bash)"`"""
    from click.shell_completion import get_completion_class

    root = ctx.find_root()
    script = get_completion_class(shell)(root.command, {}, "bkctl", "_BKCTL_COMPLETE").source()
    click.echo(script)
