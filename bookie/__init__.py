"""The BookKeeper core: codecs, metadata, storage, bookie server and client."""

import os

# gRPC's fork handlers, run when this process forks with gRPC threads busy, once left the child starting Spark's
# JVM (PySpark forks with a preexec_fn) crashed in gRPC's poller: "Java gateway process exited". Nothing here uses
# gRPC in a forked child (bookies and Spark are exec'd), so the handlers only add that risk. Read by gRPC when it
# initialises, so it is set before anything imports grpc.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
