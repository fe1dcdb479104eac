"""Pure functions, no I/O: entry framing, digests, master key, LAC buffer, write sets, BP-34 availability."""
