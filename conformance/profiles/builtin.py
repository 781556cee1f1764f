"""The profiles the kit ships: one TOML file each beside this module (`--profile openwebui`).

A file of the same name in the current folder wins over a shipped profile
(conformance/profiles/loader.py, `resolve_profile`). They ship in the wheel as package data.
"""

from __future__ import annotations

from importlib import resources

BUILT_IN = resources.files("conformance.profiles")
"""Where the shipped profiles are: this package's folder."""


def built_in_profiles() -> list[str]:
    """The names `--profile` takes besides a file's path."""
    return sorted(
        entry.name.removesuffix(".toml")
        for entry in BUILT_IN.iterdir()
        if entry.name.endswith(".toml")
    )
