"""Reading server-sent events in tests: the mock's OpenAI chunks and the app's chat frames.

One parser, `data_events`, serves both: every line of the body is a `data: ...` line, a
`:` comment (the app's keep-alive during a silence), or the blank line that ends an event,
and anything else fails the test. `read_sse` posts a chat
request to the mock and keeps the raw events (and the transport error that cut them, if one
did); `ask` posts a question to the notes app and keeps its decoded frames;
`lines_to_first_comment` reads a stream until a keep-alive comment stands in for a silence
(`lines_until`: until any line the caller waits for).
Every read runs under DEADLINE_S, so a hung stream fails its test instead of the run, and a
slow one only makes it slower.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import httpx
from openai.types.chat import ChatCompletionMessageParam

from .deadlines import DEADLINE_S

DATA = "data: "


async def data_events(response: httpx.Response) -> AsyncGenerator[str]:
    """The payload of each `data:` line of an SSE body, in order."""
    async for line in response.aiter_lines():
        if line.startswith(DATA):
            yield line[len(DATA) :]
        else:
            assert line == "" or line.startswith(":"), f"unexpected SSE line {line!r}"


# --- the mock: OpenAI chat completion chunks ---------------------------------------------------


def user(text: str) -> list[ChatCompletionMessageParam]:
    return [{"role": "system", "content": "You are terse."}, {"role": "user", "content": text}]


def chat_body(text: str, stream: bool = True, **extra: Any) -> dict[str, Any]:
    return {"model": "lfm2-test", "messages": user(text), "stream": stream, **extra}


@dataclass
class SseResult:
    """What a raw SSE read saw."""

    status: int
    headers: httpx.Headers
    events: list[str] = field(default_factory=list[str])
    error: Exception | None = None

    @property
    def chunks(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for event in self.events:
            if event == "[DONE]":
                continue
            try:
                out.append(json.loads(event))
            except json.JSONDecodeError:
                continue
        return out

    @property
    def done(self) -> bool:
        return bool(self.events) and self.events[-1] == "[DONE]"

    def joined(self, field_name: str) -> str:
        return "".join(
            c["choices"][0]["delta"].get(field_name) or "" for c in self.chunks if c.get("choices")
        )


async def read_sse(
    http: httpx.AsyncClient, body: dict[str, Any], max_events: int | None = None
) -> SseResult:
    """POST a chat request to the mock and read its SSE events (leaving after max_events)."""
    async with (
        asyncio.timeout(DEADLINE_S),
        http.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        result = SseResult(response.status_code, response.headers)
        if response.status_code != 200:
            await response.aread()
            result.events.append(response.text)
            return result
        try:
            async with aclosing(data_events(response)) as events:
                async for event in events:
                    result.events.append(event)
                    if max_events is not None and len(result.events) >= max_events:
                        break
        except httpx.HTTPError as exc:
            result.error = exc
        return result


async def lines_to_first_comment(url: str, body: dict[str, Any]) -> list[str]:
    """POST `body` to `url` and read the answer's lines up to and with its first `:` comment
    (a keep-alive), then leave."""
    return await lines_until(url, body, lambda seen: seen[-1].startswith(":"))


async def lines_until(
    url: str, body: dict[str, Any], done: Callable[[list[str]], bool]
) -> list[str]:
    """POST `body` to `url` and read the answer's lines until `done(the lines so far)`, then
    leave."""
    seen: list[str] = []
    async with (
        asyncio.timeout(DEADLINE_S),
        httpx.AsyncClient(timeout=DEADLINE_S) as client,
        client.stream("POST", url, json=body) as reply,
    ):
        async for line in reply.aiter_lines():
            seen.append(line)
            if done(seen):
                break
    return seen


# --- the notes app: chat frames ----------------------------------------------------------------


@dataclass
class Turn:
    """What the app's chat stream sent for one question."""

    status: int
    headers: httpx.Headers
    frames: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f["type"] == kind]

    @property
    def text(self) -> str:
        return "".join(f["text"] for f in self.of("delta"))

    @property
    def turn_id(self) -> str:
        return self.headers["x-turn-id"]

    @property
    def last(self) -> dict[str, Any]:
        return self.frames[-1]


async def ask(client: httpx.AsyncClient, message: str, session: str | None = None) -> Turn:
    """POST a question to the app (in `session` when given) and read every frame of its answer."""
    body = {"message": message} if session is None else {"message": message, "session": session}
    async with (
        asyncio.timeout(DEADLINE_S),
        client.stream("POST", "/api/chat", json=body) as response,
    ):
        turn = Turn(response.status_code, response.headers)
        if response.status_code != 200:
            await response.aread()
            turn.frames.append(response.json())
            return turn
        async with aclosing(data_events(response)) as events:
            async for event in events:
                turn.frames.append(json.loads(event))
    return turn
