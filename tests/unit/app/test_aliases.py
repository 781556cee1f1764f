"""Alias words: the letter runs of mixed words and the "ip" of written addresses."""

from __future__ import annotations

import pytest

from scaffold_guard.app.rag.aliases import alias_words


@pytest.mark.parametrize(
    ("text", "aliases"),
    [
        ("`nas01` (10.10.20.20)", ["ip", "nas"]),
        ("pve1 / pve2 on X11SCH-F boards", ["pve", "pve", "x", "sch"]),
        ("nas01.lab.home.arpa", ["nas"]),
        ("https://10.10.10.1:8443 and 10.10.20.0/24, 10.10.20.11-13.", ["ip", "ip", "ip"]),
        ("fd00::20 and 2001:db8::/32", ["ip", "ip"]),
        ("plain words, 2026 and 02:00:00", []),
        ("300.1.1.1 1.2.3.4.5 aa:bb:cc:dd:ee:ff bad::cafe Upgrade::Origins", []),
    ],
)
def test_alias_words_split_mixed_words_and_name_written_addresses(text: str, aliases: list[str]):
    assert alias_words(text) == aliases
