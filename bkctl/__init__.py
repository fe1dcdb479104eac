"""bkctl: the operator CLI of a BookKeeper-style bookie cluster."""

__version__ = "0.1.0"  # the distribution's version too (pyproject.toml reads it from here)
