"""Which headers a proxy passes on: RFC 9110's rule for hop-by-hop fields (section 7.6.1).
Pure.

A header that describes one connection, not the message, is not forwarded: `Connection`
itself, every header that `Connection` names (`Connection: close, X-Trace` makes `X-Trace`
this hop's own), and the fields that are hop-by-hop whether named or not (`Keep-Alive`,
`Proxy-Connection`, `TE`, `Trailer`, `Transfer-Encoding`, `Upgrade`, and the proxy
authentication pair). Both proxies here, the guard and the mock's recorder, apply it to
the client's request and to the upstream's answer; each drops more of its own on top
(`also`: `Host` and `Content-Length`, which its HTTP client writes). One rule here, so the
two proxies cannot disagree.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import AnyStr

__all__ = ["HOP_BY_HOP", "end_to_end"]

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
"""The fields that are hop-by-hop whether `Connection` names them or not (lowercase)."""


def end_to_end(
    headers: Iterable[tuple[AnyStr, AnyStr]], also: Collection[str] = ()
) -> list[tuple[AnyStr, AnyStr]]:
    """`headers` (names and values as text, or as bytes the way ASGI has them) without the
    hop-by-hop ones, the ones `Connection` names, and those in `also` (lowercase names), in
    their order."""
    pairs = list(headers)
    named = {
        token.strip()
        for name, value in pairs
        if _lower(name) == "connection"
        for token in _lower(value).split(",")
    }
    return [
        (name, value)
        for name, value in pairs
        if (lower := _lower(name)) not in HOP_BY_HOP and lower not in named and lower not in also
    ]


def _lower(text: str | bytes) -> str:
    return (text.decode("latin-1") if isinstance(text, bytes) else text).lower()
