"""Alias words: words a note's text means without writing them on their own. Pure.

The notes index stores them per section, in a column of their own weighted like the body
and never shown (scaffold_guard/app/rag/index.py). Deliberate choices a reader might want to "fix":
- A word that mixes letters and digits adds its letter runs, so a host `nas01` is found by
  "NAS" (the tokenizer keeps `nas01` whole) and `pve2` by "pve". Questions are not split,
  so "nas01" in a question still matches `nas01` itself.
- A written IP address (`10.10.20.20`, `10.10.20.0/24`, `fd00::20`) adds the word "ip", so
  "IP" in a question finds where addresses are, not only where the word is written (table
  headers, `ip=` in a command). The two go together: "nas" is then in a quarter of the
  sample sections, and a rarely written "ip" would outweigh it and rank tables of other
  hosts' addresses first ("What is the IP of the NAS?").
"""

from __future__ import annotations

import ipaddress
import re

from scaffold_guard.app.rag.query import WORD

IP_ALIAS = "ip"

_LETTER_OR_DIGIT_RUN = re.compile(r"[^\W\d_]+|\d+")
# What may be a written IP address (a /prefix or :port after it is left alone); `ipaddress`
# has the last word, so 300.1.1.1, a time such as 02:00:00 or a MAC address is not one.
_ADDRESS = re.compile(
    r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]*\w)"
    r"|(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])"
)


def alias_words(text: str) -> list[str]:
    """Words a text means without writing them on their own; see the module docstring.

    `IP_ALIAS` once per written IPv4 or IPv6 address, then, in the rest of the text, the
    letter runs of every word that mixes letters and digits ("nas01" -> "nas", "X11SCH-F"
    -> "x", "sch"), lower-cased.
    """
    aliases: list[str] = []

    def address(match: re.Match[str]) -> str:
        if not _is_ip_address(match.group()):
            return match.group()
        aliases.append(IP_ALIAS)
        return " "  # so the hex of "fd00::20" does not add "fd"

    rest = _ADDRESS.sub(address, text)
    for word in WORD.findall(rest):
        runs = _LETTER_OR_DIGIT_RUN.findall(word)
        if len(runs) > 1:
            aliases.extend(run.lower() for run in runs if not run.isdigit())
    return aliases


def _is_ip_address(candidate: str) -> bool:
    if not any(c.isdigit() for c in candidate):
        return False  # "bad::cafe" is a valid IPv6 address, but more likely words
    try:
        ipaddress.ip_address(candidate)
    except ValueError:
        return False
    return True
