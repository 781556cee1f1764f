"""The FastAPI app object: routes, the shared turn dependencies, and the page.

`create_app(settings)` wires the real parts (notes index, document tools, the LLM client,
the query log, the chat log) and closes them when the app shuts down. Turn logic is tested
without a network one layer down, on `scaffold_guard.app.turn.run_turn` with a scripted model.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TextIO

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware

from scaffold_guard.app.api import chat as chat_api
from scaffold_guard.app.api import history as history_api
from scaffold_guard.app.api import info as info_api
from scaffold_guard.app.api.sse import OpenStreams
from scaffold_guard.app.api.validation import body_parse_error, validation_error
from scaffold_guard.app.config import Settings
from scaffold_guard.app.data_dir import DataDirError, check_data_dir
from scaffold_guard.app.rag.llm import LLMConfig, chat_stream_retried, make_client
from scaffold_guard.app.rag.retrieval import NotesIndex
from scaffold_guard.app.rag.tools import NotesTools
from scaffold_guard.app.rag.types import ChatMessage, RetryNotice, RoundEnd, StreamPiece, ToolSpec
from scaffold_guard.app.storage import QueryLog
from scaffold_guard.app.turn import TurnDeps
from scaffold_guard.app.turn_log import TurnLog
from servekit.limits import RequestLimits
from servekit.same_origin import SameOrigin
from servekit.security_headers import SecurityHeaders, security_headers

_HERE = Path(__file__).resolve().parent
# The page: frontend/ at the root of a checkout; the wheel ships a copy as
# scaffold_guard/app/frontend/.
_CHECKOUT_FRONTEND = _HERE.parents[1] / "frontend"
FRONTEND = next(
    (folder for folder in (_HERE / "frontend", _CHECKOUT_FRONTEND) if folder.is_dir()),
    _CHECKOUT_FRONTEND,
)


MAX_BODY_BYTES = 64 * 1024
"""The largest request body: a question is at most 4000 characters, 24 KB as JSON escapes."""
BODY_TIMEOUT_S = 10.0
"""How long a request body may take to arrive whole (servekit.limits.RequestLimits)."""
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
    " connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self';"
    " frame-ancestors 'none'"
)
"""The app's Content-Security-Policy. The page (frontend/index.html) loads one stylesheet and
one ES module from /static, which imports the rest (the vendored marked and DOMPurify
included) from /static, and talks only to its own origin. So everything is `'self'` and
nothing is inline: no inline script or style, no `eval`, no outside image (a markdown image
in a model's answer cannot carry notes to another host, faults.md 1b), no plugin, no
`<base>` rewrite, no framing."""


def _limit_error(status: int, message: str) -> bytes:
    del status  # the status line says it
    return json.dumps({"detail": message}).encode()


def llm_config(settings: Settings) -> LLMConfig:
    if settings.llm_base_url is None:
        raise ValueError("no LLM base URL: start the embedded mock first (python -m app)")
    return LLMConfig(
        base_url=settings.llm_base_url,
        model=settings.llm_model,
        api_key=settings.llm_api_key,
        timeout_s=settings.llm_timeout_s,
        max_attempts=settings.llm_max_attempts,
        retry_base_delay_s=settings.llm_retry_delay_s,
        retry_after_cap_s=settings.llm_retry_after_cap_s,
        pool_idle_s=settings.llm_pool_idle_s,
        max_reply_bytes=settings.llm_max_reply_bytes,
        max_reply_chars=settings.llm_max_reply_chars,
    )


def create_app(
    settings: Settings, log_echo: TextIO | None = None, body_timeout_s: float = BODY_TIMEOUT_S
) -> FastAPI:
    """The app; turns go to the LLM at `settings.llm_base_url`. A request body must arrive
    whole within `body_timeout_s` (else 408).

    The chat log goes to `settings.log_file`, and also to `log_echo` when given.
    """
    config = llm_config(settings)
    check_data_dir(settings.data_dir, settings.log_file)
    index_path = settings.db_path.with_suffix(".index.sqlite3")
    try:
        index = NotesIndex(settings.notes_dir, index_path)
        index.refresh()
        query_log = QueryLog(settings.db_path)
    except sqlite3.Error as error:
        raise DataDirError(
            f"the databases in {settings.data_dir} cannot be opened ({error}): move them"
            " aside to start afresh (the notes index is rebuilt; the history is lost), or"
            " set SG_DATA_DIR elsewhere"
        ) from error
    client = make_client(config)
    turn_log = TurnLog(settings.log_file)
    if log_echo is not None:
        turn_log.echo_to(log_echo)

    def chat_upstream(
        messages: list[ChatMessage], tools: list[ToolSpec] | None
    ) -> AsyncIterator[StreamPiece | RetryNotice | RoundEnd]:
        return chat_stream_retried(client, config, messages, tools)

    deps = TurnDeps(
        settings=settings,
        index=index,
        tools=NotesTools(settings.notes_dir),
        chat=chat_upstream,
        query_log=query_log,
        logger=turn_log.logger,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncGenerator[None]:
        yield
        await client.close()
        query_log.close()
        index.close()
        turn_log.close()

    app = FastAPI(title="scaffold-guard notes chat", lifespan=lifespan)
    # Starlette runs the middleware added last first: security headers, request limits (the
    # Host check among them), CORS for the allowed origins, then the same-origin check.
    app.add_middleware(
        SameOrigin,
        error_body=_limit_error,
        paths=("/api/",),
        allowed_origins=settings.allowed_origins,
    )
    if settings.allowed_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=sorted(settings.allowed_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["content-type"],
        )
    app.add_middleware(
        RequestLimits,
        error_body=_limit_error,
        max_body_bytes=MAX_BODY_BYTES,
        body_timeout_s=body_timeout_s,
        hosts=settings.hosts,
    )
    # Added last, so outermost: the refusals of RequestLimits carry the headers too.
    app.add_middleware(SecurityHeaders, headers=security_headers(PAGE_POLICY))
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, body_parse_error)
    app.state.turn_deps = deps
    app.state.upstream = client
    app.state.open_streams = OpenStreams()
    app.include_router(chat_api.router)
    app.include_router(history_api.router)
    app.include_router(info_api.router)
    app.mount("/static", StaticFiles(directory=FRONTEND), name="static")

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:  # pyright: ignore[reportUnusedFunction]
        return FileResponse(FRONTEND / "index.html")

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:  # pyright: ignore[reportUnusedFunction]
        return Response(status_code=204)

    return app
