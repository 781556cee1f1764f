"""The root conftest's one TLS context per set of arguments for every httpx client."""

from __future__ import annotations

import ssl
from typing import Any

import httpx

from ...conftest import shared_ssl_contexts


def test_a_context_is_made_once_per_set_of_arguments():
    made: list[dict[str, Any]] = []

    def create(**arguments: Any) -> ssl.SSLContext:
        made.append(arguments)
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)

    shared = shared_ssl_contexts(create)
    assert shared() is shared(verify=True, cert=None, trust_env=True)
    assert shared(verify=False) is not shared()
    assert shared(cert=["a.pem"]) is not shared(cert=["a.pem"])  # no key: made each time
    assert [m["verify"] for m in made] == [True, False, True, True]


def test_httpx_clients_of_the_tests_share_their_context():
    with httpx.Client() as one, httpx.Client() as two:
        pools = [client._transport._pool for client in (one, two)]  # pyright: ignore[reportAttributeAccessIssue]
        assert pools[0]._ssl_context is pools[1]._ssl_context
