"""A backup's ledgers written into a cluster (``bkctl cluster restore``).

- :mod:`admin.restore.plan`: the checks that write nothing, and which ledger goes to which id, which files each
  Spark task reads;
- :mod:`admin.restore.job`: the claim in the driver, the writes in Spark's tasks (:mod:`bookie.client.replay`), the
  clean-up of a run that failed.
"""
