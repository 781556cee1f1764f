"""Relay Chat: a chat app as many are written, with no guardrail at all.

It asks the model through the official openai SDK, streamed, and relays every
`delta.content` to the page as it comes: whatever markup the model writes, its user sees.
It is what the guard proxy is for: pointed at the model server directly it fails the
conformance kit, pointed at the proxy it passes (tests/conformance_selftest/test_proxy_target.py).

- `GET /`: the page (static/index.html).
- `POST /api/ask {"message": str}`: the answer as plain text, streamed (the page's Stop
  aborts the request, which closes the model's stream); a failure of the
  model call (an SDK error, a cut stream, the proxy's malformed-reply event) ends the
  stream with one line `\\n[[error]] <the SDK's message>` that the page shows as the error.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import openai
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse
from starlette.routing import Route

STATIC = Path(__file__).parent / "static"
SYSTEM = "You are a helpful assistant."
ERROR_MARK = "\n[[error]] "


def build_app(model_base_url: str) -> Starlette:
    """The app, asking the OpenAI API at `model_base_url` (ending in /v1)."""
    client = openai.AsyncOpenAI(base_url=model_base_url, api_key="relay-key", max_retries=0)

    async def page(_: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def ask(request: Request) -> Response:
        message = str((await request.json()).get("message", ""))
        return StreamingResponse(answer(message), media_type="text/plain; charset=utf-8")

    async def answer(message: str) -> AsyncGenerator[str]:
        try:
            stream = await client.chat.completions.create(
                model="relay-model",
                stream=True,
                messages=[
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": message},
                ],
            )
            async with stream:  # closed when the page stops reading (Stop): so is the model's
                async for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        yield chunk.choices[0].delta.content
        except openai.OpenAIError as exc:
            yield f"{ERROR_MARK}{getattr(exc, 'message', None) or exc}"

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncGenerator[None]:
        # The SDK's pooled connections close with the app: one left open when the server's
        # event loop closed made uvloop refuse to close it (EBUSY, after a run that ended on
        # a completed stream).
        yield
        await client.close()

    routes = [Route("/", page), Route("/api/ask", ask, methods=["POST"])]
    return Starlette(routes=routes, lifespan=lifespan)
