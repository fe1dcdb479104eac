import click

from bkctl.bookie.replace_in_ledgers import replacement_options


@click.command()
@click.option(
    "--bookie-id",
    "id_kind",
    type=click.Choice(["hostname", "ip"]),
    required=True,
    help="What the bookie's id is now: its host name (useHostNameAsBookieID=true) or its IP.",
)
@replacement_options
@click.pass_obj
def update(app, id_kind, limit, rate, yes, dry_run):
    """Rename a bookie in ledger metadata after it switched between IP and host name ids (updateledgers)

    The bookie is -c's bk_server.conf: its id now (as that configuration gives it, with useHostNameAsBookieID
    matching --bookie-id), replacing its id the other way in every ledger's ensembles. Refused while the old id is
    registered (exit 3); --dry-run lists the ledgers, each update is a compare-and-set.
    """
    import dataclasses

    from admin.replace_bookie import check_replacement
    from bkctl.bookie.replace_in_ledgers import run_replacement
    from bookie.errors import InvalidArgument
    from bookie.server.config import BookieConfig
    from bookie.server.network import BookieNetwork

    if not app.conf_path:
        raise InvalidArgument("name the bookie's configuration: -c bk_server.conf")
    config = BookieConfig.load(app.conf_path)
    if config.useHostNameAsBookieID != (id_kind == "hostname"):
        raise InvalidArgument(
            f"--bookie-id {id_kind} needs useHostNameAsBookieID={str(id_kind == 'hostname').lower()} in "
            f"{app.conf_path} (the bookie's id as it is now)"
        )
    for key in ("bookieId", "advertisedAddress"):
        if getattr(config, key):
            raise InvalidArgument(f"{app.conf_path} sets {key}: the bookie's id does not follow its IP or host name")
    new_id = BookieNetwork.of(config).bookie_id
    flipped = dataclasses.replace(config, useHostNameAsBookieID=not config.useHostNameAsBookieID)
    old_id = BookieNetwork.of(flipped).bookie_id
    check_replacement(app.metadata, old_id, new_id)
    run_replacement(app, old_id, new_id, limit, rate, yes, dry_run)
