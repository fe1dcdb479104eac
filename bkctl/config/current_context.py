import click

from bkctl.options import output_option


@click.command("current-context")
@output_option
@click.pass_obj
def current_context(app):
    """Print the name of the current context (exit 5 when none is set)"""
    from bookie.errors import NotFound

    contexts = app.contexts
    if contexts.current is None:
        raise NotFound(f"no current context in {contexts.path} (`bkctl config use-context NAME` sets one)")
    app.terminal.document({"name": contexts.current}, lambda: app.terminal.line(contexts.current))
