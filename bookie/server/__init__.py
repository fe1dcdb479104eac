"""The bookie process: configuration, lifecycle, gRPC servicers, read-only mode, metrics."""
