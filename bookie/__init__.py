"""The BookKeeper core: codecs, metadata, storage, bookie server and client."""
