"""Foreign Chat: a correct guardrail app whose page shares nothing with the reference app's.

The server half. A turn is started over HTTP and streamed over a WebSocket, the way some
real chat front ends split it (Open WebUI posts a completion and receives it over a socket):

- `GET /` and `GET /c/{chat}`: the page (static/index.html); a chat lives at its own URL.
- `GET /ws`: the page's one WebSocket. The server first sends `["hello", CLIENT_ID]`; every
  later frame is a JSON array `[kind, ref, payload]`: `think` and `delta` carry HTML-escaped
  text (the page inserts it as HTML), `retry` (the one recovery is on its way), `end`,
  `fail` (payload: the error detail), `stopped`, and `title` (ref: the chat, payload: its
  title as text). The page sends `{"stop": MESSAGE_ID}` to stop a turn.
- `POST /api/turns {"client", "message", "chat" (null for a new chat), "model", "text"}`
  starts a turn and answers `{"chat", "turn"}` with the turn's id in the `Fc-Turn-Ref`
  header. 400 without a model or a text, 409 for a client with no open socket.
- `GET /api/models`, `GET /api/chats/{chat}` (its messages, for a reload), `GET /healthz`.

The guardrail is scaffold_guard.app.rag's, imported: each model request's answer text goes through a
fresh `RoundFilter`, thinking never does (G9), a round with no tool calls whose visible text is
empty after stripping gets exactly one recovery (`needs_recovery`, `with_correction`, no
`tools`), and an empty recovery ends the turn with the malformed-reply error. Every other
request offers the app's own tool, `current_time`; a call to it (or to any tool it never
offered) is answered and the turn goes on. Stop cancels the turn's task, which closes the
upstream response (scaffold_guard.app.rag.llm's `chat_stream` closes it on every exit).

After every turn, done, failed or stopped, a title call asks the model for a title with the
system message TITLE_PROMPT and the user's question (trigger and all) as the user message:
a side call, which the kit's profile names under [model_calls]. The title is shown through
`scrub`, since it is model text too.

The log: one line per turn, written before its last frame goes out,
`<iso time> foreign-chat turn#<id> chat=<id> model=<m> outcome=<o> rounds=N tool_calls=N
elapsed=<ms>ms scaffold_stripped=N` (N summed over the turn's requests), and the
guardrail's `strip_warning` for each request that stripped something.
"""

from __future__ import annotations

import asyncio
import html
import json
import secrets
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import openai
from openai.types.chat import ChatCompletionToolUnionParam
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from guardrail.model_profiles import registry_for
from guardrail.policy import RoundFilter, needs_recovery, scrub, strip_warning, with_correction
from guardrail.registries import DEFAULT_REGISTRY
from scaffold_guard.app.errors import LLMError
from scaffold_guard.app.rag.llm import LLMConfig, chat_stream, make_client
from scaffold_guard.app.rag.types import (
    AssistantMessage,
    ChatMessage,
    RoundEnd,
    ToolCall,
    ToolMessage,
    ToolSpec,
)

STATIC = Path(__file__).parent / "static"
MODELS = ("lfm2-1.2b", "lfm2-8b-a1b")
SYSTEM_PROMPT = "You are Foreign Chat, a terse assistant. Use current_time for the time."
TITLE_PROMPT = "Generate a concise title for this chat. Reply with the title only."
TURN_HEADER = "Fc-Turn-Ref"
MALFORMED_REPLY = "The model returned a malformed reply — please try again."
"""Contract G3's error detail, verbatim."""
MODEL_FAILED = "The model did not answer properly — please try again."
MAX_TOOL_ROUNDS = 3
MAX_TEXT_CHARS = 8000
TITLE_CHARS = 60
TOOLS: list[ToolSpec] = [
    {
        "type": "function",
        "function": {
            "name": "current_time",
            "description": "The current UTC time, as an ISO 8601 string.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]


@dataclass
class Chat:
    id: str
    history: list[ChatMessage] = field(default_factory=list[ChatMessage])
    title: str | None = None


@dataclass
class Client:
    """One page's socket: frames go out one at a time; its running turns by message id."""

    id: str
    socket: WebSocket
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    turns: dict[str, asyncio.Task[None]] = field(default_factory=dict[str, "asyncio.Task[None]"])
    gone: bool = False

    async def send(self, kind: str, ref: str, payload: Any = None) -> None:
        if self.gone:
            return
        async with self.lock:
            try:
                await self.socket.send_text(json.dumps([kind, ref, payload], ensure_ascii=False))
            except Exception:  # the page went away mid-turn: nobody is left to tell
                self.gone = True


@dataclass
class Turn:
    id: str
    chat: Chat
    model: str
    question: str
    started: float = field(default_factory=time.perf_counter)
    rounds: int = 0
    tool_calls: int = 0
    stripped: int = 0
    logged: bool = False


class ForeignChat:
    def __init__(self, mock_url: str, log_file: Path) -> None:
        base_url = f"{mock_url.rstrip('/')}/v1"
        self.llm = make_client(LLMConfig(base_url=base_url, model=MODELS[0]))
        # The title call goes through the official SDK, as a third-party app's would.
        self.sdk = openai.AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
        self.log_file = log_file
        self.chats: dict[str, Chat] = {}
        self.clients: dict[str, Client] = {}
        self.background: set[asyncio.Task[None]] = set()

    # --- the log ------------------------------------------------------------------------

    def log(self, message: str) -> None:
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
        with self.log_file.open("a", encoding="utf-8") as out:
            out.write(f"{stamp} foreign-chat {message}\n")

    def log_turn(self, turn: Turn, outcome: str) -> None:
        turn.logged = True
        elapsed = round((time.perf_counter() - turn.started) * 1000)
        self.log(
            f"turn#{turn.id} chat={turn.chat.id} model={turn.model} outcome={outcome}"
            f" rounds={turn.rounds} tool_calls={turn.tool_calls} elapsed={elapsed}ms"
            f" scaffold_stripped={turn.stripped}"
        )

    # --- a turn -------------------------------------------------------------------------

    def start(self, client: Client, message_id: str, turn: Turn) -> None:
        task = asyncio.create_task(self.play(client, message_id, turn))
        client.turns[message_id] = task
        task.add_done_callback(lambda _: client.turns.pop(message_id, None))

    async def play(self, client: Client, ref: str, turn: Turn) -> None:
        user: ChatMessage = {"role": "user", "content": turn.question}
        messages: list[ChatMessage] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            *turn.chat.history,
            user,
        ]
        try:
            answer = await self.rounds(client, ref, turn, messages)
            if answer is None:
                self.log_turn(turn, "malformed")
                await client.send("fail", ref, MALFORMED_REPLY)
            else:
                # a plain assistant message (no tool_calls key), which ChatMessage lacks
                said = cast("ChatMessage", {"role": "assistant", "content": answer})
                turn.chat.history += [user, said]
                self.log_turn(turn, "done")
                await client.send("end", ref)
        except LLMError:
            self.log_turn(turn, "model-error")
            await client.send("fail", ref, MODEL_FAILED)
        except asyncio.CancelledError:
            self.log_turn(turn, "stopped")
            await client.send("stopped", ref)
            raise
        finally:
            if not turn.logged:
                self.log_turn(turn, "crashed")
            self.spawn(self.title(client, turn))

    async def rounds(
        self, client: Client, ref: str, turn: Turn, messages: list[ChatMessage]
    ) -> str | None:
        """The turn's model requests; the visible answer, or None when the recovery was empty."""
        recovering = False
        tool_rounds = 0
        while True:
            turn.rounds += 1
            shown = RoundFilter(registry_for(turn.model))  # `--profiles auto`, per turn
            answer: list[str] = []
            calls: tuple[ToolCall, ...] = ()
            tools = None if recovering else TOOLS
            stream = chat_stream(self.llm, turn.model, messages, tools)
            async with aclosing(stream) as pieces:
                async for piece in pieces:
                    if isinstance(piece, RoundEnd):
                        calls = piece.tool_calls
                    elif piece.kind == "thinking":
                        await client.send("think", ref, html.escape(piece.text))
                    else:
                        await self.show(client, ref, answer, shown.feed(piece.text))
            await self.show(client, ref, answer, shown.flush())
            turn.stripped += shown.stripped_chars
            if shown.stripped_chars:
                self.log(strip_warning(shown.stripped_chars, turn.rounds, shown.first_span))
            if recovering:
                return "".join(answer) if shown.visible else None
            if needs_recovery(
                stripped_chars=shown.stripped_chars, visible=shown.visible, tool_calls=len(calls)
            ):
                recovering = True
                messages = with_correction(messages)
                await client.send("retry", ref)
                continue
            if calls and tool_rounds < MAX_TOOL_ROUNDS:
                tool_rounds += 1
                turn.tool_calls += len(calls)
                messages = [*messages, *self.tool_round("".join(answer), calls)]
                continue
            return "".join(answer)

    @staticmethod
    async def show(client: Client, ref: str, answer: list[str], text: str) -> None:
        if text:
            answer.append(text)
            await client.send("delta", ref, html.escape(text))

    @staticmethod
    def tool_round(content: str, calls: tuple[ToolCall, ...]) -> list[ChatMessage]:
        assistant: AssistantMessage = {
            "role": "assistant",
            "content": content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in calls
            ],
        }
        results: list[ChatMessage] = [assistant]
        for call in calls:
            if call.name == "current_time":
                text = datetime.now(UTC).isoformat(timespec="seconds")
            else:
                text = f"error: there is no tool named {call.name!r}; answer without it."
            result: ToolMessage = {"role": "tool", "tool_call_id": call.id, "content": text}
            results.append(result)
        return results

    # --- the title call (a side call) ----------------------------------------------------

    async def title(self, client: Client, turn: Turn) -> None:
        try:
            reply = await self.sdk.chat.completions.create(
                model=turn.model,
                messages=[
                    {"role": "system", "content": TITLE_PROMPT},
                    {"role": "user", "content": turn.question},
                ],
                tools=cast("list[ChatCompletionToolUnionParam]", TOOLS),  # the same shape
                stream=False,
            )
        except openai.APIError:
            return
        text = reply.choices[0].message.content if reply.choices else None
        title = " ".join(scrub(text or "", DEFAULT_REGISTRY).split())[:TITLE_CHARS]
        if title:
            turn.chat.title = title
            await client.send("title", turn.chat.id, title)

    def spawn(self, work: Any) -> None:
        task: asyncio.Task[None] = asyncio.create_task(work)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    # --- the socket ---------------------------------------------------------------------

    async def socket(self, websocket: WebSocket) -> None:
        await websocket.accept()
        client = Client(secrets.token_hex(8), websocket)
        self.clients[client.id] = client
        await client.send("hello", client.id)
        try:
            while True:
                data = await websocket.receive_json()
                ref = data.get("stop") if isinstance(data, dict) else None
                if isinstance(ref, str) and (task := client.turns.get(ref)) is not None:
                    task.cancel()
        except (WebSocketDisconnect, json.JSONDecodeError, RuntimeError):
            pass
        finally:
            client.gone = True
            self.clients.pop(client.id, None)
            for task in list(client.turns.values()):
                task.cancel()

    async def close(self) -> None:
        tasks = [*self.background, *(t for c in self.clients.values() for t in c.turns.values())]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.llm.close()
        await self.sdk.close()


def _problem(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"problem": detail}, status_code=status)


def build_app(mock_url: str, log_file: Path) -> Starlette:
    """Foreign Chat's ASGI app, its model the mock at `mock_url` (without /v1)."""
    chat_app = ForeignChat(mock_url, log_file)

    async def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    async def models(request: Request) -> Response:
        return JSONResponse({"models": list(MODELS)})

    async def chat_history(request: Request) -> Response:
        chat = chat_app.chats.get(request.path_params["chat"])
        if chat is None:
            return _problem(404, "no such chat")
        shown = [
            {"role": m["role"], "text": m.get("content") or ""}
            for m in chat.history
            if m["role"] in ("user", "assistant")
        ]
        return JSONResponse({"chat": chat.id, "title": chat.title, "messages": shown})

    async def start_turn(request: Request) -> Response:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return _problem(400, "the body is not JSON")
        if not isinstance(body, dict):
            return _problem(400, "the body is not an object")
        text, model = body.get("text"), body.get("model")
        if model not in MODELS:
            return _problem(400, "pick a model first")
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT_CHARS:
            return _problem(400, "the message is empty or too long")
        client = chat_app.clients.get(str(body.get("client")))
        ref = body.get("message")
        if client is None or not isinstance(ref, str) or ref in client.turns:
            return _problem(409, "no open socket for this page, or that message is running")
        chat_id = body.get("chat")
        chat = chat_app.chats.get(chat_id) if isinstance(chat_id, str) else None
        if chat is None:
            chat = Chat(secrets.token_hex(6))
            chat_app.chats[chat.id] = chat
        turn = Turn(secrets.token_hex(8), chat, str(model), text.strip())
        chat_app.start(client, ref, turn)
        return JSONResponse({"chat": chat.id, "turn": turn.id}, headers={TURN_HEADER: turn.id})

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        try:
            yield
        finally:
            await chat_app.close()

    return Starlette(
        routes=[
            Route("/", page),
            Route("/c/{chat:str}", page),
            Route("/api/models", models),
            Route("/api/chats/{chat:str}", chat_history),
            Route("/api/turns", start_turn, methods=["POST"]),
            Route("/healthz", healthz),
            WebSocketRoute("/ws", chat_app.socket),
            Mount("/static", StaticFiles(directory=STATIC)),
        ],
        lifespan=lifespan,
    )
