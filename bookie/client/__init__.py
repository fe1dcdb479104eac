"""The BookKeeper client."""
