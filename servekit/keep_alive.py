"""How long each side of a proxy here keeps an idle connection. Pure constants.

Two rules, one for each side of a proxy, so that the side that lets go first is always the
one that can tell: its own pool's idle connections go before the server behind it closes
them, and the clients in front go before the proxy closes theirs.
"""

from __future__ import annotations

__all__ = ["CLIENT_KEEPALIVE_S", "POOL_IDLE_S"]

POOL_IDLE_S = 1.5
"""How long an idle pooled upstream connection is kept for reuse: shorter than uvicorn's
5 s, gunicorn's 2 s and Node's 5 s keep-alive."""

CLIENT_KEEPALIVE_S = 75.0
"""How long a proxy keeps a client's idle connection open (nginx's default). uvicorn's own
5 s is shorter than the pools of the clients in front of it (aiohttp's 15 s: Open WebUI;
the openai SDK's httpx 5 s): a client that reuses a connection the proxy is closing at that
moment loses its request, the race the proxy's own upstream pool retries. The client's
pool lets go first."""
