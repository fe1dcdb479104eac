"""Copying ledgers from one cluster to another under the same ids (`bkctl ledger copy`): a plan that checks the
target before anything is written (:mod:`admin.copy.plan`), and the Spark job that replays the ledgers
(:mod:`admin.copy.job`)."""
