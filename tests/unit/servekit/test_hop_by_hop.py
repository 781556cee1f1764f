"""servekit.hop_by_hop, and both proxies on it: the guard and the mock's recorder pass on the
same end-to-end headers.

Regression (issue 26): the two policies disagreed on `Connection` tokens. The recorder
dropped every header `Connection` named (RFC 9110, section 7.6.1); the guard dropped only
its fixed set, so `Connection: keep-alive, X-Private` sent `X-Private` on upstream and back.
"""

from __future__ import annotations

from multidict import CIMultiDict
from starlette.requests import Request

from guard.http.upstream import response_headers, upstream_headers
from mock_llm.record.recorder import _response_headers, _upstream_headers
from servekit.hop_by_hop import HOP_BY_HOP, end_to_end

NAMED = [("Connection", "keep-alive, X-Private"), ("X-Private", "p"), ("X-Kept", "k")]


def request(headers: list[tuple[str, str]]) -> Request:
    raw = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
    return Request({"type": "http", "method": "POST", "path": "/v1/x", "headers": raw})


def test_the_fixed_set_and_every_header_connection_names_are_dropped():
    headers = [
        ("Connection", "close, X-Private ,x-other"),
        ("X-Private", "p"),
        ("X-Other", "o"),
        ("Keep-Alive", "timeout=5"),
        ("Proxy-Connection", "keep-alive"),
        ("TE", "trailers"),
        ("Transfer-Encoding", "chunked"),
        ("Upgrade", "h2c"),
        ("Authorization", "Bearer sk-1"),
        ("X-Trace", "t"),
    ]
    assert end_to_end(headers) == [("Authorization", "Bearer sk-1"), ("X-Trace", "t")]
    assert "proxy-connection" in HOP_BY_HOP


def test_bytes_headers_as_asgi_has_them_follow_the_same_rule():
    raw = [(b"connection", b"X-Private"), (b"x-private", b"p"), (b"content-type", b"a/b")]
    assert end_to_end(raw) == [(b"content-type", b"a/b")]


def test_also_drops_a_callers_own_headers():
    headers = [("Host", "h"), ("Content-Length", "3"), ("X-Kept", "k")]
    assert end_to_end(headers, also=("host", "content-length")) == [("X-Kept", "k")]


def test_a_header_named_in_connection_is_dropped_by_the_guard_as_by_the_recorder():
    """The disagreement of issue 26: the guard used to pass `X-Private` on."""
    assert upstream_headers(request(NAMED)) == {"x-kept": "k", "Accept-Encoding": "identity"}
    assert _upstream_headers(NAMED) == [("X-Kept", "k")]
    upstream = CIMultiDict(NAMED)
    assert response_headers(upstream) == {"X-Kept": "k"}
    raw = [(name.encode(), value.encode()) for name, value in NAMED]
    assert _response_headers(raw) == [(b"X-Kept", b"k")]
