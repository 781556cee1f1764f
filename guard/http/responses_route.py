"""The guard proxy's route for the OpenAI Responses API (`POST /v1/responses`).

`responses_routes(settings, session)` guard `POST` to any path ending in `/responses`: a
stream through `guard.wire.responses_stream`, a whole answer through `guard.wire.responses_whole`
(the flow is `guard.relay`'s, the API's value `guard.wire.apis.RESPONSES`), a markup-only
reply getting the one recovery. The
rest of `/v1/responses/...` (retrieve, cancel, delete) goes to the catch-all.

Deliberate choices (the chat route's, in this API's shapes):
- An upstream error status is passed on as it is; an unreachable upstream is a 502 with
  the OpenAI error body.
- A stream that breaks after it began ends with an `error` event then `response.failed`,
  the malformed-reply copy (`code` `malformed_reply`) for an empty recovery (G3).
- A read that fails after the completion came is not a failure: the answer is whole.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from guard.http.openai_http import KEEPALIVE
from guard.http.upstream import (
    UpstreamSession,
    guarded,
)
from guard.settings import GuardSettings
from guard.wire.apis import RESPONSES

__all__ = ["responses_routes"]


def responses_routes(settings: GuardSettings, session: UpstreamSession) -> list[Route]:
    async def responses(request: Request) -> Response:
        return await guarded(request, settings, session, RESPONSES, KEEPALIVE)

    return [Route("/{prefix:path}responses", responses, methods=["POST"])]
