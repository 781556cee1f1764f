"""What the guard proxy's OpenAI routes share on the HTTP side (chat completions in
`guard.http.server`, the Responses API in `guard.http.responses_route`): the keep-alive
comment that stands in for a silence, and a request passed on with an unreachable
upstream answered in the OpenAI shape. The upstream side every route shares is
`guard.http.upstream`; the flow itself, `guard.relay`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from guard.http.upstream import pass_on, unreachable
from guard.wire.apis import CHAT_COMPLETIONS
from servekit.pool import Pool

KEEPALIVE = b": keep-alive\n\n"
"""An SSE comment, which every reader skips: sent while the upstream is silent mid-stream."""


async def openai_pass_on(session: Pool, upstream: str, request: Request, body: bytes) -> Response:
    """Any request passed on as it is; the answer streamed back as it comes (a 502 in the
    OpenAI shape when the upstream cannot be reached)."""
    return await pass_on(session, upstream, request, body, unreachable(CHAT_COMPLETIONS))
