"""A test filesystem that loses what was not synced when its power is cut (see ``model``)."""
