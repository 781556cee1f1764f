"""Profiles: how the kit drives a target's page and what the target can do.

`model.py` (the profile as data, and the default: the reference app's page), `loader.py`
(a TOML file read on top of the default, or a shipped profile by name) over `keys.py` (each
value validated, errors with the file and the key), `builtin.py` (the shipped profiles,
the `*.toml` files beside it) and `writer.py` (the text `python -m conformance init`
writes).
"""
