import click

from bkctl.options import output_option, sandbox_dir_option


@click.command()
@sandbox_dir_option
@output_option
@click.pass_obj
def stop(app, state_dir: str | None):
    """Stop the sandbox's processes (the data is kept); exit 0 when nothing runs"""
    from bookie.local.sandbox import Sandbox

    sandbox = Sandbox(state_dir)
    stopped = sandbox.stop() is not None  # nothing running: what was asked holds already, not an error (as
    # `systemctl stop` of a stopped unit)
    app.terminal.document(
        {"stateDir": str(sandbox.dir), "stopped": stopped},
        lambda: app.terminal.line(
            f"sandbox {sandbox.dir} stopped" if stopped else f"sandbox {sandbox.dir}: nothing running, nothing to do"
        ),
    )
