"""The guard proxy's route for Anthropic's Messages API (`POST /v1/messages`).

`messages_routes(settings, session)` serve `POST` to any path ending in `/messages`: the
request goes upstream as it came, a stream comes back through `guard.wire.messages_stream`, a
whole answer through `guard.wire.messages_api.MessageGuard` (the flow is `guard.relay`'s, the
API's value `guard.wire.apis.MESSAGES`), and a markup-only reply gets the one recovery.
The rest of `/v1/messages/...` (`count_tokens`, batches) goes to the catch-all.

Deliberate choices (the other routes' rules, in this API's shapes):
- An upstream error status is passed on as it is; an unreachable upstream is a 502 with
  Anthropic's error body.
- A stream that breaks after it began ends with Anthropic's in-band `error` event (the SDK
  raises `APIStatusError`), the malformed-reply copy for an empty recovery (G3).
- A whole recovered answer keeps the recovery's own id (the client has seen no other); a
  stream keeps the first message's id.
- Upstream silences mid-stream get a `ping` event, what every Anthropic client reads.
- Another API's `/messages` (OpenAI Assistants) comes back as it came: its blocks are not
  Messages API text blocks, so nothing in it is filtered.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from guard.http.upstream import (
    UpstreamSession,
    guarded,
)
from guard.settings import GuardSettings
from guard.wire.apis import MESSAGES
from guard.wire.responses_api import event_bytes

__all__ = ["messages_routes"]

PING = event_bytes({"type": "ping"})
"""What the client gets during an upstream silence: the API's own keep-alive event."""


def messages_routes(settings: GuardSettings, session: UpstreamSession) -> list[Route]:
    async def messages(request: Request) -> Response:
        return await guarded(request, settings, session, MESSAGES, PING)

    return [
        Route("/messages", messages, methods=["POST"]),
        Route("/{prefix:path}/messages", messages, methods=["POST"]),
    ]
