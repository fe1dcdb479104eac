"""The bookie process: configuration, lifecycle, BookKeeper's protocol, the admin services, read-only mode, metrics."""
