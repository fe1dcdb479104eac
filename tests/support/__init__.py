"""What tests share, a module per topic:

- ``cli``: Driving bkctl as a user would: the command tree, in-process calls, completion requests, usage errors.
- ``security``: Credentials of conftest's secure_zookeeper and credentials fixtures, and files that hold them.
- ``storage``: Ledger storage opened in-process: payloads, records, adds, crashes.
- ``wire``: BookKeeper's protocol v3 from a test: request builders and a raw connection to a bookie's port.
- ``cluster``: Real bookie processes on a ZooKeeper: start, kill and restart them, read their metrics.
- ``waiting``: Waiting for a condition, the failure saying what was awaited.
- ``checks``: Cluster checks' scenarios: ledgers written, data lost or corrupted on a bookie, bkctl's verdicts.
"""
