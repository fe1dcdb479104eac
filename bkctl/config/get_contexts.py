import click

from bkctl.options import output_option


@click.command("get-contexts")
@output_option
@click.pass_obj
def get_contexts(app):
    """List the contexts: the current one marked *, each with its service URI, HTTP admin port and timeout"""
    contexts = app.contexts
    docs = [
        {
            "name": c.name,
            "current": c.name == contexts.current,
            "serviceUri": c.service_uri,
            "httpPort": c.http_port,
            "timeout": c.timeout,
            # TLS to the bookies: file paths (-o json/yaml only; the table stays within 80 columns)
            "tlsTrustStore": c.tls_trust_store,
            "tlsCert": c.tls_cert,
            "tlsKey": c.tls_key,
            "tlsKeyPasswordFile": c.tls_key_password_file,
            "tlsHostnameVerification": c.tls_hostname_verification,
        }
        for _, c in sorted(contexts.contexts.items())
    ]
    # " ": a blank cell, as kubectl's (not <none>: nothing is missing)
    rows = [["*" if d["current"] else " ", d["name"], d["serviceUri"], d["httpPort"], d["timeout"]] for d in docs]
    app.terminal.document(
        docs,
        lambda: app.terminal.table(
            ["CURRENT", "NAME", "SERVICE-URI", "HTTP-PORT", "TIMEOUT"],
            rows,
            f"no contexts in {contexts.path} (`bkctl config set-context NAME --service-uri URI` adds one)",
        ),
    )
