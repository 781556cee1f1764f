"""The shared base of the self-test targets: a tiny chat app whose model is mock_llm.

`BaseTarget` is a complete, correct guardrail app in a few hooks; each target module
subclasses it and overrides the one hook its bug lives in. `build_app` turns a target into
a Starlette app with three routes:

- `GET /`: the chat page (targets.page), with the target's `PAGE_HOOKS`.
- `POST /api/chat {"message": str}`: the turn as text/event-stream, one `data: {json}` frame
  per event, like the reference app: `start`, `thinking` (raw), `delta` (filtered),
  `retry` (`{"type": "retry", "reason": "recovery"}`), then `done` or `error` (`detail`);
  header `X-Turn-Id`. 422 with `{"detail": ...}` for a body without a usable message.
- `GET /healthz`.

One turn (`BaseTarget.turn`): the question goes to `{mock_url}/v1/chat/completions` (model
`lfm2`, a system message and the user message, streamed, read with httpx), offering one
document tool, `read` (`OFFERS_TOOLS`; a target without tools sends none). Each request's
answer text goes through a fresh filter (`new_filter`, a ScaffoldingFilter with the
registry `--profiles auto` picks for the model); thinking never does. A request that ends
with structured tool calls (a tool round) has them answered with a fixed result
(`TOOL_RESULT`, one `tool` message per call after the assistant message that carries the
round's filtered content and its calls), and the next request follows, with tools offered
again for at most `MAX_TOOL_ROUNDS` tool rounds. A request with no tool calls whose visible
text is empty (only whitespace) and that stripped something gets exactly one recovery
(`with_correction` of the messages that request sent, no tools); a recovery whose visible
text is empty too ends the turn with the malformed-reply error frame. A tool round is never
recovered, whatever it stripped (G12). The chat log (`log_file`) gets the guardrail's strip
warning for each request that stripped something, and one line per turn ending `total_ms=N
retries=0 scaffold_stripped=N` (N summed over the turn's requests), written just before the
turn's last frame goes out (or when a stopped turn is closed), so a reader that has seen
the last frame finds the line.

A client that goes away closes the turn's generators down to the upstream response: Starlette
cancels the stream on the disconnect, and `ClosingStream` closes a generator left suspended
at a `yield`. Targets never retry transport failures: an upstream error ends the turn with
an error frame (`UPSTREAM_FAILED`).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

import anyio
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from guardrail.model_profiles import registry_for
from guardrail.policy import needs_recovery, strip_warning, with_correction
from guardrail.scaffolding import ScaffoldingFilter
from scaffold_guard.app.rag.types import (
    AssistantMessage,
    ChatMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
)

from .page import render_page

MODEL = "lfm2"
REGISTRY = registry_for(MODEL)
"""What `--profiles auto` strips for MODEL: LFM2's markup and the special-token profiles."""
SYSTEM_PROMPT = "You are a test target."
MALFORMED_REPLY = "The model returned a malformed reply — please try again."
"""Contract G3's error detail, verbatim."""
UPSTREAM_FAILED = "The model service did not answer properly — please try again."
MAX_MESSAGE_CHARS = 4000
UPSTREAM_TIMEOUT_S = 30.0

TOOL_SPECS: list[ToolSpec] = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read one note by its path.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]
TOOL_RESULT = "backup-notes.md: backups run nightly at 02:00 with restic to the NAS."
"""What every tool call is answered with: the targets have no documents, only this."""
MAX_TOOL_ROUNDS = 2

Frame = dict[str, Any]
Piece = tuple[Literal["thinking", "content"], str] | ToolCall
"""Thinking or answer text as it arrives, or a structured tool call once it is complete."""


class TextFilter(Protocol):
    """What a turn needs of a round's answer filter (ScaffoldingFilter has it all)."""

    @property
    def stripped_chars(self) -> int: ...

    @property
    def first_span(self) -> str: ...

    def feed(self, chunk: str) -> str: ...

    def flush(self) -> str: ...


class WrappedFilter:
    """The real ScaffoldingFilter, with `feed` and `flush` for a broken target to bend: the
    counts a turn logs stay the real filter's."""

    def __init__(self) -> None:
        self._inner = ScaffoldingFilter(REGISTRY)

    @property
    def stripped_chars(self) -> int:
        return self._inner.stripped_chars

    @property
    def first_span(self) -> str:
        return self._inner.first_span

    def feed(self, chunk: str) -> str:
        return self._inner.feed(chunk)

    def flush(self) -> str:
        return self._inner.flush()


class UpstreamError(Exception):
    """The model request failed: a status other than 200, a cut or unreadable stream."""


@dataclass
class TurnRecord:
    """What one turn did, for its log line and its last frame."""

    turn_id: str
    started: float = field(default_factory=time.perf_counter)
    rounds: int = 0
    thinking_chars: int = 0
    content_chars: int = 0
    scaffold_stripped: int = 0
    answer: list[str] = field(default_factory=list[str])  # the visible (filtered) text
    tool_calls: int = 0
    logged: bool = False

    @property
    def total_ms(self) -> int:
        return round((time.perf_counter() - self.started) * 1000)


@dataclass
class Round:
    """One model request: its filter, what visible text came out, and its tool calls."""

    filter: TextFilter
    thinking: TextFilter | None = None  # None: thinking shown raw, as G9 wants
    visible: bool = False
    content: list[str] = field(default_factory=list[str])
    tool_calls: list[ToolCall] = field(default_factory=list[ToolCall])


def delta(text: str) -> Frame:
    return {"type": "delta", "text": text}


async def stream_pieces(
    http: httpx.AsyncClient,
    url: str,
    messages: list[ChatMessage],
    tools: list[ToolSpec] | None = None,
) -> AsyncGenerator[Piece]:
    """The thinking and content pieces of one streamed chat completion, as they arrive, then
    its tool calls (assembled from their deltas) once the stream has ended."""
    body: dict[str, Any] = {"model": MODEL, "messages": messages, "stream": True}
    if tools:
        body["tools"] = tools
    calls: dict[int, dict[str, str]] = {}
    try:
        async with http.stream("POST", url, json=body) as response:
            if response.status_code != 200:
                raise UpstreamError(f"HTTP {response.status_code}")
            async for line in response.aiter_lines():
                if not line.startswith("data: "):
                    continue
                data = line.removeprefix("data: ")
                if data == "[DONE]":
                    for call in calls.values():
                        yield ToolCall(call["id"], call["name"], call["arguments"])
                    return
                chunk = json.loads(data)
                if "error" in chunk:
                    raise UpstreamError(f"an error event: {chunk['error']}")
                for choice in chunk.get("choices") or []:
                    part = choice.get("delta") or {}
                    thinking = part.get("reasoning_content") or part.get("reasoning")
                    if thinking:
                        yield ("thinking", thinking)
                    if part.get("content"):
                        yield ("content", part["content"])
                    for piece in part.get("tool_calls") or []:
                        call = calls.setdefault(
                            piece["index"], {"id": "", "name": "", "arguments": ""}
                        )
                        function = piece.get("function") or {}
                        call["id"] = piece.get("id") or call["id"]
                        call["name"] += function.get("name") or ""
                        call["arguments"] += function.get("arguments") or ""
            raise UpstreamError("the stream ended without [DONE]")
    except (httpx.HTTPError, json.JSONDecodeError) as exc:
        raise UpstreamError(f"{type(exc).__name__}: {exc}") from exc


class BaseTarget:
    """A correct target; subclasses override one hook to break one clause."""

    MODE: ClassVar[str] = "base"
    PAGE_HOOKS: ClassVar[str] = "{}"
    """A JavaScript object literal overriding the page's `delta`/`raw`/`retry`/`end` hooks."""
    PAGE: ClassVar[str | None] = None
    """A whole page of its own instead of targets.page (a stranger's page over the same
    `/api/chat`), or None."""
    RECOVERS: ClassVar[bool] = True
    OFFERS_TOOLS: ClassVar[bool] = True
    """Whether the target offers the `read` tool (its profile declares `tools` to match)."""

    def __init__(self, mock_url: str, log_file: Path) -> None:
        self.completions_url = f"{mock_url.rstrip('/')}/v1/chat/completions"
        self.log_file = log_file
        self.background: set[asyncio.Task[None]] = set()
        self.http: httpx.AsyncClient | None = None  # one pooled client, open while served
        log_file.parent.mkdir(parents=True, exist_ok=True)

    # --- the hooks a broken target overrides --------------------------------------------

    def new_filter(self) -> TextFilter:
        """A fresh answer filter for one request."""
        return ScaffoldingFilter(REGISTRY)

    def new_thinking_filter(self) -> TextFilter | None:
        """A filter for one request's thinking text; None shows it raw (G9)."""
        return None

    def first_messages(self, question: str) -> list[ChatMessage]:
        """The messages of a turn's first request."""
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": question},
        ]

    def recovery_due(self, one: Round) -> bool:
        """Whether a finished (not recovering) request gets the one recovery (G2, G12)."""
        return self.RECOVERS and needs_recovery(
            stripped_chars=one.filter.stripped_chars,
            visible=one.visible,
            tool_calls=len(one.tool_calls),
        )

    def content_frames(self, raw: str, shown: str) -> list[Frame]:
        """The frames for one piece of answer text: `raw` from the model, `shown` filtered.

        At the end of a request `raw` is '' and `shown` is what the filter held back.
        """
        return [delta(shown)] if shown else []

    def end_frame(self, frame: Frame, record: TurnRecord) -> Frame:
        """The turn's `done` or `error` frame as it goes out."""
        return frame

    def recovery_failed(self, record: TurnRecord) -> Frame:
        """The last frame of a turn whose one recovery was empty too (G3)."""
        return {"type": "error", "turn": record.turn_id, "detail": MALFORMED_REPLY}

    def add_stripped(self, record: TurnRecord, stripped: int) -> None:
        """Count a finished request's stripped characters into the turn (G10: a sum)."""
        record.scaffold_stripped += stripped

    async def before_recovery(self, messages: list[ChatMessage], record: TurnRecord) -> None:
        """Called once the recovery is decided, before its request goes out."""

    def upstream(
        self, messages: list[ChatMessage], tools: list[ToolSpec] | None = None
    ) -> AbstractAsyncContextManager[AsyncIterator[Piece]]:
        """One model request's pieces; leaving the context closes the upstream response."""
        return self._upstream(messages, tools)

    def log_line(self, record: TurnRecord) -> str:
        return (
            f"chat turn={record.turn_id} mode=deflected rounds={record.rounds}"
            f" tools={record.tool_calls}"
            f" thinking_chars={record.thinking_chars} content_chars={record.content_chars}"
            f" total_ms={record.total_ms} retries=0 scaffold_stripped={record.scaffold_stripped}"
        )

    # --- the turn -----------------------------------------------------------------------

    async def turn(self, record: TurnRecord, question: str) -> AsyncGenerator[Frame]:
        messages = self.first_messages(question)
        recovering = False
        tool_rounds = 0
        try:
            yield {"type": "start", "turn": record.turn_id, "mode": "deflected"}
            while True:
                offer = self.OFFERS_TOOLS and not recovering and tool_rounds < MAX_TOOL_ROUNDS
                one = Round(self.new_filter(), self.new_thinking_filter())
                tools = TOOL_SPECS if offer else None
                async with aclosing(self._round(messages, one, record, tools)) as frames:
                    async for frame in frames:
                        yield frame
                if recovering:
                    if not one.visible:
                        yield self._last(record, self.recovery_failed(record))
                        return
                    break
                if self.recovery_due(one):
                    recovering = True
                    messages = with_correction(messages)
                    yield {"type": "retry", "reason": "recovery"}
                    await self.before_recovery(messages, record)
                    continue
                if one.tool_calls and offer:
                    tool_rounds += 1
                    messages = [*messages, *self._tool_round(one, record)]
                    for call in one.tool_calls:
                        yield {"type": "tool", "name": call.name, "ok": True}
                    continue
                break
            done = {"type": "done", "turn": record.turn_id, "mode": "deflected", "sources": []}
            yield self._last(record, done)
        except UpstreamError:
            yield self._last(
                record, {"type": "error", "turn": record.turn_id, "detail": UPSTREAM_FAILED}
            )
        finally:
            if not record.logged:  # stopped or abandoned: the line still gets written
                self._log_turn(record)

    async def _round(
        self,
        messages: list[ChatMessage],
        one: Round,
        record: TurnRecord,
        tools: list[ToolSpec] | None,
    ) -> AsyncGenerator[Frame]:
        record.rounds += 1
        number = record.rounds
        async with self.upstream(messages, tools) as pieces:
            async for piece in pieces:
                if isinstance(piece, ToolCall):
                    one.tool_calls.append(piece)
                    continue
                kind, text = piece
                if kind == "thinking":
                    record.thinking_chars += len(text)
                    if one.thinking is not None:
                        text = one.thinking.feed(text)
                    if text:
                        yield {"type": "thinking", "text": text}
                else:
                    for frame in self.content_frames(
                        text, self._shown(one, record, one.filter.feed(text))
                    ):
                        yield frame
        if one.thinking is not None and (tail := one.thinking.flush()):
            yield {"type": "thinking", "text": tail}
        for frame in self.content_frames("", self._shown(one, record, one.filter.flush())):
            yield frame
        stripped = one.filter.stripped_chars
        self.add_stripped(record, stripped)
        if stripped:
            self.write_log("WARNING", strip_warning(stripped, number, one.filter.first_span))

    @staticmethod
    def _tool_round(one: Round, record: TurnRecord) -> list[ChatMessage]:
        """The assistant message of a tool round and the fixed answer to each of its calls."""
        record.tool_calls += len(one.tool_calls)
        assistant: AssistantMessage = {
            "role": "assistant",
            "content": "".join(one.content) or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in one.tool_calls
            ],
        }
        results: list[ToolMessage] = [
            {"role": "tool", "tool_call_id": call.id, "content": TOOL_RESULT}
            for call in one.tool_calls
        ]
        return [assistant, *results]

    @staticmethod
    def _shown(one: Round, record: TurnRecord, text: str) -> str:
        if text:
            one.content.append(text)
            record.answer.append(text)
            record.content_chars += len(text)
            if not text.isspace():
                one.visible = True
        return text

    @asynccontextmanager
    async def _upstream(
        self, messages: list[ChatMessage], tools: list[ToolSpec] | None
    ) -> AsyncGenerator[AsyncIterator[Piece]]:
        if self.http is None:
            raise RuntimeError("the target's HTTP client opens with its app's lifespan")
        async with aclosing(
            stream_pieces(self.http, self.completions_url, messages, tools)
        ) as pieces:
            yield pieces

    def _last(self, record: TurnRecord, frame: Frame) -> Frame:
        """The turn's last frame; its log line is written first."""
        out = self.end_frame(frame, record)
        self._log_turn(record)
        return out

    def _log_turn(self, record: TurnRecord) -> None:
        record.logged = True
        self.write_log("INFO", self.log_line(record))

    def write_log(self, level: str, message: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        with self.log_file.open("a", encoding="utf-8") as out:
            out.write(f"{stamp} {level} {message}\n")


class ClosingStream(StreamingResponse):
    """A StreamingResponse that closes its generator when it ends, however it ends.

    On a disconnect Starlette cancels the sending task; a generator suspended at a `yield`
    at that moment would otherwise wait for the garbage collector to close its upstream.
    """

    def __init__(self, body: AsyncGenerator[bytes], headers: Mapping[str, str]) -> None:
        super().__init__(body, media_type="text/event-stream", headers=headers)
        self._body = body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self._body.aclose()


async def encode(frames: AsyncGenerator[Frame]) -> AsyncGenerator[bytes]:
    async with aclosing(frames):
        async for frame in frames:
            payload = json.dumps(frame, ensure_ascii=False, separators=(",", ":"))
            yield b"data: " + payload.encode() + b"\n\n"


def build_app(target: BaseTarget) -> Starlette:
    """The target's ASGI app."""
    page = target.PAGE if target.PAGE is not None else render_page(target.MODE, target.PAGE_HOOKS)

    async def index(request: Request) -> Response:
        return HTMLResponse(page)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "mode": target.MODE})

    async def chat(request: Request) -> Response:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return JSONResponse({"detail": "the body is not JSON"}, status_code=422)
        message = body.get("message") if isinstance(body, dict) else None
        if not isinstance(message, str) or not message.strip():
            return JSONResponse({"detail": "the message is missing or empty"}, status_code=422)
        if len(message) > MAX_MESSAGE_CHARS:
            return JSONResponse({"detail": "the message is too long"}, status_code=422)
        record = TurnRecord(uuid.uuid4().hex[:16])
        headers = {"X-Turn-Id": record.turn_id, "Cache-Control": "no-store"}
        return ClosingStream(encode(target.turn(record, message)), headers)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        # One client for every upstream request, as a real app keeps one: a client per
        # request builds a fresh TLS context each time, which was a third of a target's CPU.
        async with httpx.AsyncClient(timeout=UPSTREAM_TIMEOUT_S) as target.http:
            try:
                yield
            finally:  # what a target left running in the background (no-stop) ends with it
                tasks = list(target.background)
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        target.http = None

    return Starlette(
        routes=[
            Route("/", index, methods=["GET"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/api/chat", chat, methods=["POST"]),
        ],
        lifespan=lifespan,
    )
