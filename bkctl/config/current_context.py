import click


@click.command("current-context")
@click.pass_obj
def current_context(app):
    """Print the name of the current context (exit 5 when none is set)"""
    from bookie.errors import NotFound

    contexts = app.contexts
    if contexts.current is None:
        raise NotFound(f"no current context in {contexts.path} (`bkctl config use-context NAME` sets one)")
    app.terminal.line(contexts.current)
