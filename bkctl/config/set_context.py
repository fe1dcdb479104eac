import click

from bkctl.completers import complete_context_names
from bkctl.contexts import MAX_TIMEOUT
from bkctl.options import dry_run_option, finite_seconds, output_option


@click.command("set-context")
@click.argument("name", shell_complete=complete_context_names)
@click.option(
    "--service-uri",
    metavar="URI",
    help="The cluster's metadata service, e.g. "
    "zk+hierarchical://zk1:2181;zk2:2181/ledgers (required for a new "
    "context).",
)
@click.option(
    "--http-port",
    type=click.IntRange(1, 65535),
    metavar="PORT",
    help="The bookies' HTTP admin port (httpServerPort): admin commands use BookKeeper's HTTP admin API "
    "on it, as with their --http-port.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0, MAX_TIMEOUT, min_open=True),
    callback=finite_seconds,
    metavar="SECONDS",
    help="Give up reaching ZooKeeper after this long, as bkctl --timeout [default: 8].",
)
@click.option("--tls-trust-store", type=click.Path(dir_okay=False), metavar="FILE", help="As bkctl --tls-trust-store.")
@click.option("--tls-cert", type=click.Path(dir_okay=False), metavar="FILE", help="As bkctl --tls-cert.")
@click.option("--tls-key", type=click.Path(dir_okay=False), metavar="FILE", help="As bkctl --tls-key.")
@click.option(
    "--tls-key-password-file", type=click.Path(dir_okay=False), metavar="FILE", help="As bkctl --tls-key-password-file."
)
@click.option(
    "--tls-hostname-verification/--no-tls-hostname-verification",
    default=None,
    help="As bkctl --tls-hostname-verification.",
)
@dry_run_option
@output_option
@click.pass_obj
def set_context(app, name, service_uri, http_port, timeout, dry_run, **tls):
    """Create a context, or change the settings given of an existing one (the others are kept)

    A context is not made current: `bkctl config use-context NAME` does that. TLS files are stored as absolute paths
    (their contents, and passwords, never): the context then reaches its bookies over TLS, as with bkctl --tls-*.
    """
    import dataclasses

    from bkctl import contexts
    from bookie.errors import InvalidArgument
    from bookie.meta.uri import parse_service_uri

    contexts.check_name(name)
    import os

    tls = {k: os.path.abspath(v) if isinstance(v, str) else v for k, v in tls.items()}
    given = {"service_uri": service_uri, "http_port": http_port, "timeout": timeout, **tls}
    given = {key: value for key, value in given.items() if value is not None}
    if not given:
        raise click.UsageError("nothing to set: give --service-uri, --http-port, --timeout or --tls-*")
    if service_uri is not None:
        parse_service_uri(service_uri)
    with contexts.editing(app.terminal.warn, save=not dry_run) as config:
        old = config.contexts.get(name)
        if old is None and service_uri is None:
            raise InvalidArgument(f"context {name} is new: give its --service-uri")
        context = dataclasses.replace(old or contexts.Context(name, service_uri), **given)
        context.tls_settings()  # a trust store with the client's files, each readable (keys: by their owner only)
        config.contexts[name] = context
    verb = "modified" if old else "created"
    doc = {
        "name": name,
        "serviceUri": context.service_uri,
        "httpPort": context.http_port,
        "timeout": context.timeout,
        "created": old is None,
        "dryRun": dry_run,
    }
    app.terminal.document(
        doc,
        lambda: app.terminal.line(f"context/{name} would be {verb} (dry run)" if dry_run else f"context/{name} {verb}"),
    )
