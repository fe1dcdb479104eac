import click

from bkctl.completers import complete_context_names
from bkctl.options import dry_run_option, output_option


@click.command("delete-context")
@click.argument("name", shell_complete=complete_context_names)
@dry_run_option
@output_option
@click.pass_obj
def delete_context(app, name, dry_run):
    """Delete a context; when it was the current one, no context is current afterwards

    Only the entry in the contexts file goes: nothing in the cluster changes. Exit 5 when there is no such context.
    """
    from bkctl import contexts

    with contexts.editing(app.terminal.warn, save=not dry_run) as config:
        config.get(name)
        del config.contexts[name]
        was_current = config.current == name
        if was_current:
            config.current = None
    app.terminal.document(
        {"name": name, "deleted": not dry_run, "wasCurrent": was_current, "dryRun": dry_run},
        lambda: app.terminal.line(
            f"context/{name} would be deleted (dry run)" if dry_run else f"context/{name} deleted"
        ),
    )
    if was_current and not dry_run:
        app.terminal.warn(f"{name} was the current context: none is now (`bkctl config use-context NAME`)")
