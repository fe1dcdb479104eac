import click

from bkctl.completers import complete_context_names
from bkctl.options import dry_run_option, output_option


@click.command("use-context")
@click.argument("name", shell_complete=complete_context_names)
@dry_run_option
@output_option
@click.pass_obj
def use_context(app, name, dry_run):
    """Make a context the current one: commands use its cluster when no -u, -c or --context names another

    Exit 5 when there is no such context.
    """
    from bkctl import contexts

    with contexts.editing(app.terminal.warn, save=not dry_run) as config:
        config.get(name)
        config.current = name
    app.terminal.document(
        {"name": name, "current": True, "dryRun": dry_run},
        lambda: app.terminal.line(
            f"context/{name} would be current (dry run)" if dry_run else f"context/{name} is current"
        ),
    )
