"""The guard proxy's memory in front of a hostile model server (issue 27), case by case.

A raw upstream in this process (asyncio, loopback) plays each hostile case at full size; the
guard proxy runs as a subprocess in front of it (`python -m guard`). The cases are played on
chat completions, and the opener with no end marker on every guarded streamed route too
(the Responses API, the Messages API, Ollama's /api/chat: the volume behind
tests/unit/guard/test_hostile_replies.py). Its baseline RSS is
read after clean streams; before each case its peak is reset (`/proc/PID/clear_refs`), and
after it the peak (`VmHWM`) is read, while a clean stream runs alongside the hostile one.
A row passes when the peak stays within the case's stated bound (plus `SLACK_BYTES`) of the
baseline, the client got what the case promises, and the clean stream completed; any FAIL
exits 1. Rows are (target, case): the guard is the one target today, and another (a client
that streams from a model server and has a /proc entry) is one more `Target`.

    uv run python benchmarks/hostile_upstream.py
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import tempfile
import zlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
from measure import memory, reset_peak
from servers import RunningServer, module_spec, serving
from verdicts import report, verdict

from guard.settings import MAX_ANSWER_BYTES
from guard.wire.reply import MAX_TEXTS
from servekit.sse import DEFAULT_MAX_LINE_BYTES
from tests.support.guarded_wires import CHAT, MESSAGES, OLLAMA, RESPONSES, WIRES, Wire

MIB = 1024 * 1024
SLACK_BYTES = 16 * MIB
"""What a case may add to the proxy's RSS beyond its stated bound: the allocator's arenas,
aiohttp's read buffers, one upstream read in flight."""
REQUEST_GUARD_S = 120.0  # a hang guard per request, not a timing claim
HOSTILE_BYTES = 50 * 1000 * 1000  # the size of the long line and of the unended span
BOMB_BYTES = 1024 * MIB  # what the gzip bomb inflates to
CASE_MARK = "[[case:"
RECOVERY_MARK = b"Your previous reply contained raw tool-call markup"
CLEAN = "Backups run nightly at 02:00."

# --- the hostile upstream: chat completions as raw HTTP ----------------------------------------


def chunk_event(delta: dict[str, object], index: int = 0, finish: str | None = None) -> bytes:
    choice = {"index": index, "delta": delta, "finish_reason": finish}
    meta = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return b"data: " + json.dumps({**meta, "choices": [choice]}).encode() + b"\n\n"


OPENING = chunk_event({"role": "assistant"})
CLOSING = chunk_event({}, finish="stop") + b"data: [DONE]\n\n"


def text(content: str, index: int = 0) -> bytes:
    return chunk_event({"content": content}, index)


def sse_head(*headers: str, content_type: str = "text/event-stream") -> bytes:
    lines = ["HTTP/1.1 200 OK", f"content-type: {content_type}", *headers]
    return ("\r\n".join([*lines, "transfer-encoding: chunked", "connection: close"])).encode() + (
        b"\r\n\r\n"
    )


def clean_stream() -> Iterator[bytes]:
    yield from (OPENING, text(CLEAN), CLOSING)


def long_line() -> Iterator[bytes]:
    yield OPENING
    piece = b"x" * 65536
    for _ in range(HOSTILE_BYTES // len(piece)):
        yield piece


def unended_span() -> Iterator[bytes]:
    yield OPENING + text("<|tool_call_start|>")
    piece = text("[read(path='/homelab/backup-notes.md')] " * 100)
    for _ in range(HOSTILE_BYTES // len(piece)):
        yield piece
    yield CLOSING


def invalid_utf8() -> Iterator[bytes]:
    yield OPENING + text("@").replace(b"@", b"caf\xff ")
    split = chunk_event({"content": "n\u00e9 \U0001f600"}).replace(b"\\ud83d\\ude00", "😀".encode())
    cut = split.index("😀".encode()) + 2
    yield from (split[:cut], split[cut:] + CLOSING)


def unended_span_on(wire: Wire) -> Callable[[], Iterator[bytes]]:
    """`unended_span` in another route's stream format."""

    def body() -> Iterator[bytes]:
        yield wire.opening + wire.text("<|tool_call_start|>", 0)
        piece = wire.text("[read(path='/homelab/backup-notes.md')] " * 100, 0)
        for _ in range(HOSTILE_BYTES // len(piece)):
            yield piece
        yield wire.closing

    return body


def many_choices() -> Iterator[bytes]:
    yield OPENING
    for index in range(10_000):
        yield text("a", index)
    yield CLOSING


def gzip_bomb() -> Iterator[bytes]:
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip format
    zeros = bytes(MIB)
    for _ in range(BOMB_BYTES // MIB):
        if piece := squeeze.compress(zeros):
            yield piece
    yield squeeze.flush()


@dataclass(frozen=True)
class Case:
    """One hostile upstream behaviour, the bound the proxy states for it, and what the
    client must get."""

    name: str
    body: Callable[[], Iterator[bytes]]
    bound: str  # the bound as stated (docs/reliability.md)
    bound_bytes: int  # what the bound lets the proxy hold
    promise: str  # what the client must get
    headers: tuple[str, ...] = ()
    chunked: bool = True  # else one body with no transfer coding (the bomb's bytes)
    wire: Wire = CHAT  # the route it is played on (tests/support/guarded_wires.py)


TOO_MANY = f"a reply with more than {MAX_TEXTS} choices or parts"
LINE = f"line is longer than {DEFAULT_MAX_LINE_BYTES} bytes"
CASES = (
    Case(
        "opener, 50 MB with no end",
        unended_span,
        "held text: an end marker's prefix; first_span 200 chars",
        0,
        f"the one recovery: {CLEAN!r}",
    ),
    Case(
        "invalid + split UTF-8",
        invalid_utf8,
        f"a line: {DEFAULT_MAX_LINE_BYTES // MIB} MiB",
        DEFAULT_MAX_LINE_BYTES,
        "'caf\\ufffd né 😀'",
    ),
    Case(
        "10,000 choices",
        many_choices,
        f"{MAX_TEXTS} filters (MAX_TEXTS)",
        0,
        f"in-band error: {TOO_MANY}",
    ),
    Case(
        "gzip bomb, 1 GiB inflated",
        gzip_bomb,
        "nothing inflated: refused unread",
        0,
        "502: Content-Encoding gzip refused",
        ("content-encoding: gzip",),
        chunked=False,
    ),
    Case(
        "one 50 MB line",
        long_line,
        f"a line: {DEFAULT_MAX_LINE_BYTES // MIB} MiB (max_line_bytes)",
        DEFAULT_MAX_LINE_BYTES,
        f"in-band error: {LINE}",
    ),
    *(
        Case(
            f"opener, 50 MB with no end ({wire.name})",
            unended_span_on(wire),
            "held text: an end marker's prefix; first_span 200 chars",
            0,
            f"the one recovery: {CLEAN!r}",
            wire=wire,
        )
        for wire in (RESPONSES, MESSAGES, OLLAMA)
    ),
)
BY_MARK = {f"{CASE_MARK}{n}]]": c for n, c in enumerate(CASES)}


async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One request: /healthz and the like answered 200, a recovery and a clean question
    with a clean stream, a case's question with the case."""
    with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        body = await reader.readexactly(length)
        case = next((c for mark, c in BY_MARK.items() if mark.encode() in body), None)
        wire = next((w for w in WIRES if head.startswith(f"POST {w.path} ".encode())), CHAT)
        if not head.startswith(b"POST"):
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
        elif (case is None or RECOVERY_MARK in body) and wire is not CHAT:
            clean = [wire.opening + wire.text(CLEAN, 0) + wire.closing]
            await write_chunked(writer, sse_head(content_type=wire.content_type), iter(clean))
        elif case is None or RECOVERY_MARK in body:
            await write_chunked(writer, sse_head(), clean_stream())
        elif case.chunked:
            head_out = sse_head(*case.headers, content_type=case.wire.content_type)
            await write_chunked(writer, head_out, case.body())
        else:
            writer.write(sse_head(*case.headers).replace(b"transfer-encoding: chunked\r\n", b""))
            for piece in case.body():
                writer.write(piece)
                await writer.drain()
        await writer.drain()
    writer.close()


async def write_chunked(writer: asyncio.StreamWriter, head: bytes, body: Iterator[bytes]) -> None:
    writer.write(head)
    for piece in body:
        writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        await writer.drain()
    writer.write(b"0\r\n\r\n")


@contextlib.asynccontextmanager
async def hostile_upstream() -> AsyncGenerator[str]:
    """The upstream on a free loopback port; a case still writing at the end is cancelled
    and awaited (a client that left may not have been noticed yet)."""
    handlers: set[asyncio.Task[None]] = set()

    async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            await answer(reader, writer)
        finally:
            handlers.discard(task)

    server = await asyncio.start_server(tracked, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        for task in list(handlers):
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)


# --- the targets: who is measured ---------------------------------------------------------------


@dataclass(frozen=True)
class Got:
    """What a client got: the status and the whole body."""

    status: int
    body: bytes


@dataclass(frozen=True)
class Target:
    """Something that reads a model server's streams, measured in its own process: how to
    start it in front of an upstream, how a client asks it, and whether what the client
    got keeps each case's promise."""

    name: str
    start: Callable[[str, Path], contextlib.AbstractAsyncContextManager[RunningServer]]
    ask: Callable[[httpx.AsyncClient, RunningServer, str, Wire], Awaitable[Got]]
    kept: Callable[[Case, Got], tuple[bool, str]]
    wires: tuple[Wire, ...] = (CHAT,)  # the routes it serves: a case on another is not its


def guard_server(
    upstream: str, folder: Path
) -> contextlib.AbstractAsyncContextManager[RunningServer]:
    return serving(lambda port: module_spec("guard", port, "--upstream", upstream), folder)


async def ask_guard(
    client: httpx.AsyncClient, server: RunningServer, question: str, wire: Wire
) -> Got:
    got = await client.post(f"{server.base_url}{wire.path}", json=wire.asks(question))
    return Got(got.status_code, got.content)


def chat_outcome(got: Got) -> str:
    """What a chat client was told: its answer text, an in-band error, or a refusal."""
    if got.status != 200:
        error = json.loads(got.body).get("error", {})
        return f"{got.status}: {error.get('message', '')}"
    texts: list[str] = []
    for line in got.body.decode().splitlines():
        if not line.startswith("data: {"):
            continue
        event = json.loads(line[6:])
        if "error" in event:
            return f"in-band error: {event['error']['message']}"
        texts += [c["delta"].get("content") or "" for c in event.get("choices", [])]
    return repr("".join(texts))


def guard_kept(case: Case, got: Got) -> tuple[bool, str]:
    if case.wire is not CHAT:  # the opener on another route: its recovery's text, no error
        error = case.wire.error_of(got.body) if got.status == 200 else got.body.decode()[:100]
        outcome = repr(case.wire.text_of(got.body)) if error is None else f"error: {error}"
        return outcome == repr(CLEAN), outcome
    outcome = chat_outcome(got)
    if case.body is gzip_bomb:
        return got.status == 502 and "Content-Encoding gzip" in outcome, outcome
    if case.body is unended_span:
        return outcome == repr(CLEAN), outcome
    if case.body is invalid_utf8:
        return outcome == repr("caf\ufffd n\u00e9 \U0001f600"), outcome
    if case.body is many_choices:
        return TOO_MANY in outcome, outcome
    return LINE in outcome, outcome


GUARD = Target("guard proxy", guard_server, ask_guard, guard_kept, WIRES)
TARGETS = (GUARD,)

# --- measuring --------------------------------------------------------------------------------


async def one(
    client: httpx.AsyncClient,
    target: Target,
    server: RunningServer,
    question: str,
    wire: Wire = CHAT,
) -> Got:
    async with asyncio.timeout(REQUEST_GUARD_S):
        return await target.ask(client, server, question, wire)


async def rows(target: Target, upstream: str, folder: Path) -> list[str]:
    lines: list[str] = []
    async with target.start(upstream, folder) as server, httpx.AsyncClient(timeout=None) as client:
        pid = server.proc.pid
        for _ in range(3):  # warm-up: pools, imports, the filter's caches
            await one(client, target, server, "a clean question")
        baseline = memory(pid)["VmRSS"]
        for number, case in enumerate(CASES):
            if case.wire not in target.wires:
                continue
            reset_peak(pid)
            hostile, clean = await asyncio.gather(
                one(client, target, server, f"{CASE_MARK}{number}]]", case.wire),
                one(client, target, server, "a clean question alongside"),
            )
            peak = memory(pid)["VmHWM"]
            kept, outcome = target.kept(case, hostile)
            clean_ok = clean.status == 200 and chat_outcome(clean) == repr(CLEAN)
            grown = peak - baseline
            ok = kept and clean_ok and grown <= case.bound_bytes + SLACK_BYTES
            lines.append(
                f"| {target.name} | {case.name} | {case.bound} | {baseline / MIB:.1f} |"
                f" {peak / MIB:.1f} | {grown / MIB:+.1f} | {outcome[:100]} |"
                f" {'completed' if clean_ok else 'FAILED'} | {'PASS' if ok else 'FAIL'} |"
            )
    return lines


async def run() -> list[str]:
    table: list[str] = []
    with tempfile.TemporaryDirectory(prefix="sg-hostile-") as tmp:
        async with hostile_upstream() as upstream:
            for target in TARGETS:
                table += await rows(target, upstream, Path(tmp))
    failed = [row for row in table if row.endswith("| FAIL |")]
    return [
        f"# Hostile model server: peak RSS against the stated bounds ({platform.python_version()},"
        f" {os.cpu_count()} cores)",
        "",
        f"Baseline: RSS after clean streams. Peak: VmHWM during the case (reset before it), a"
        f" clean stream alongside. A row passes within its bound + {SLACK_BYTES // MIB} MiB.",
        f"Whole answers are bounded apart: {MAX_ANSWER_BYTES // MIB} MiB (max_answer_bytes).",
        "",
        "| target | case | bound | baseline MiB | peak MiB | growth MiB | client got |"
        " clean stream alongside | verdict |",
        "|---|---|---|---:|---:|---:|---|---|---|",
        *table,
        "",
        verdict(not failed, f"{len(table) - len(failed)} of {len(table)} rows within their bound"),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    return report(asyncio.run(run()), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
