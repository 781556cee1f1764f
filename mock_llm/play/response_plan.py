"""Turn one step into the exact sequence of things its HTTP response does. Pure.

A plan is the status and headers, a list of actions (send bytes, pause, mark the fault
fired) and how the body ends (`complete`, `eof`, `abort`), in whichever wire format the
request came in (`RequestShape.api`), each fault in that format's own shape. The server
only executes plans, so every wire detail and fault is unit-tested here without a socket.

Deliberate choices:
- Frames with no pause or fault between them are merged into one write (`coalesce`):
  clients see the same events, and the server pays the per-write cost once per stretch,
  which is most of its throughput.
- A non-streaming request gets each fault's nearest equivalent (a stall delays, a cut
  sends half the body, an in-band error becomes an HTTP 500).
- A Messages API malformed line goes under an event name, which its SDK needs to read it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from mock_llm.flows.chunking import REAL_PACING, answer_delay_s, gap_s, paced, ttft_s
from mock_llm.flows.model import (
    CutFault,
    ErrorEventFault,
    HttpFault,
    MalformedFault,
    ReasoningField,
    StallFault,
    Step,
    ToolCall,
    describe_fault,
)
from mock_llm.play.extractive import extract_answer, note_to_read
from mock_llm.wire import anthropic as anthropic_wire
from mock_llm.wire import gemini as gemini_wire
from mock_llm.wire import llama_cpp as llama_cpp_wire
from mock_llm.wire import ollama as ollama_wire
from mock_llm.wire import openai as openai_wire
from mock_llm.wire import responses as responses_wire
from servekit.error_bodies import openai_error_body
from servekit.json_codec import dumps
from servekit.openai_chunks import DONE_EVENT
from servekit.sse import json_event

Ending = Literal["complete", "eof", "abort"]
Api = Literal["openai", "ollama", "responses", "anthropic", "gemini"]
SSE_HEADERS = (("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache"))
JSON_HEADERS = (("content-type", "application/json"),)
NDJSON_HEADERS = (("content-type", ollama_wire.MEDIA_TYPE),)


@dataclass(frozen=True)
class Send:
    """Write `data`, which holds `chunks` chunk frames (for the journal's count)."""

    data: bytes
    chunks: int = 0


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class FaultFired:
    description: str


Action = Send | Pause | FaultFired


@dataclass
class ResponsePlan:
    status: int = 200
    headers: tuple[tuple[str, str], ...] = SSE_HEADERS
    actions: list[Action] = field(default_factory=list[Action])
    ending: Ending = "complete"
    headers_first: bool = False
    """Send status and headers before the first action (streams), not with the first Send."""


@dataclass(frozen=True)
class RequestShape:
    """What of the request shapes the response."""

    stream: bool
    include_usage: bool
    messages: Sequence[openai_wire.JSON]
    tools: tuple[str, ...] = ()  # the names of the functions the request offers
    api: Api = "openai"  # the wire format: chat completions, Ollama, Responses, Messages, Gemini
    json_array: bool = False  # Gemini's stream framing without `alt=sse`: one JSON array


def plan_response(
    step: Step,
    meta: openai_wire.CompletionMeta,
    field: ReasoningField,
    request: RequestShape,
    pacing: float = REAL_PACING,
) -> ResponsePlan:
    """The whole response to `step` (an `extract` step's content built from the request).

    `pacing` scales a recorded step's gaps (`--replay-pacing`: 1 as recorded, 0 none)."""
    step = paced(step, pacing)
    if step.extract is not None:
        note = note_to_read(request.messages, request.tools, step.extract)
        if note is not None and step.extract.read is not None:
            call = ToolCall(step.extract.read, json.dumps({"path": note}, ensure_ascii=False))
            step = replace(step, content="", tool_calls=(call,))
        else:
            step = replace(step, content=extract_answer(request.messages, step.extract))
    if isinstance(step.fault, HttpFault):
        return _http_fault(step, step.fault, request.api)
    if request.stream:
        return _stream(step, meta, field, request)
    return _completion(step, meta, field, request)


def _http_fault(step: Step, fault: HttpFault, api: Api) -> ResponsePlan:
    headers = JSON_HEADERS
    if fault.retry_after is not None:
        headers += (("retry-after", f"{fault.retry_after:g}"),)
    body = dumps(_error_body(fault, api))
    actions = [*_pause(answer_delay_s(step)), FaultFired(describe_fault(fault)), Send(body)]
    return ResponsePlan(status=fault.status, headers=headers, actions=actions)


def _completion(
    step: Step, meta: openai_wire.CompletionMeta, field: ReasoningField, request: RequestShape
) -> ResponsePlan:
    plan = ResponsePlan(headers=JSON_HEADERS, actions=[*_pause(answer_delay_s(step))])
    if request.api == "ollama":
        body = dumps(ollama_wire.chat_response(step, meta, request.messages))
    elif request.api == "responses":
        body = dumps(responses_wire.response(step, meta, request.messages))
    elif request.api == "anthropic":
        body = dumps(anthropic_wire.message(step, meta, request.messages))
    elif request.api == "gemini":
        body = dumps(gemini_wire.response(step, meta, request.messages))
    elif step.dialect == "llama.cpp":
        body = dumps(llama_cpp_wire.completion(step, meta, field, request.messages))
    else:
        body = dumps(openai_wire.completion(step, meta, field, request.messages))
    fault = step.fault
    if fault is not None:
        plan.actions.append(FaultFired(describe_fault(fault)))
    if isinstance(fault, StallFault):
        plan.actions.append(Pause(fault.seconds))
    elif isinstance(fault, CutFault):
        plan.headers += (("content-length", str(len(body))),)
        body = body[: len(body) // 2]
        plan.ending = "abort"
    elif isinstance(fault, MalformedFault):
        body = fault.line.encode()
    elif isinstance(fault, ErrorEventFault):
        plan.status = 500
        body = dumps(_error_body(fault, request.api))
    plan.actions.append(Send(body))
    return plan


def _stream(
    step: Step, meta: openai_wire.CompletionMeta, field: ReasoningField, request: RequestShape
) -> ResponsePlan:
    ollama = request.api == "ollama"
    if ollama:
        frames = ollama_wire.chat_lines(step, meta, request.messages)
    elif request.api == "responses":
        frames = responses_wire.stream_events(step, meta, request.messages)
    elif request.api == "anthropic":
        frames = anthropic_wire.stream_events(step, meta, request.messages)
    elif request.api == "gemini":
        frames = gemini_wire.stream_frames(step, meta, request.messages, request.json_array)
    elif step.dialect == "llama.cpp":
        frames = llama_cpp_wire.chunk_frames(
            step, meta, field, request.messages, request.include_usage
        )
    else:
        frames = _chunk_frames(step, meta, field, request)
    fault = step.fault
    assert not isinstance(fault, HttpFault)
    fire_at = None if fault is None else min(fault.after_chunks, len(frames))
    plan = ResponsePlan(headers=_stream_headers(request), headers_first=True)
    ended = False
    for sent, (pause, data) in enumerate(frames):
        if fault is not None and sent == fire_at:
            ended = _inject(plan, fault, request, meta, sent)
            if ended:
                break
        plan.actions += _pause(pause)
        plan.actions.append(Send(data, chunks=1))
    if fault is not None and fire_at == len(frames):
        ended = _inject(plan, fault, request, meta, len(frames))
    if not ended and request.api == "openai":  # the other formats send no [DONE]
        plan.actions.append(Send(DONE_EVENT))
    if not ended and _json_array(request):  # Gemini's JSON array ends with its `]`
        plan.actions.append(Send(gemini_wire.closing(json_array=True)))
    plan.actions = coalesce(plan.actions)
    return plan


def _json_array(request: RequestShape) -> bool:
    return request.api == "gemini" and request.json_array


def _stream_headers(request: RequestShape) -> tuple[tuple[str, str], ...]:
    if request.api == "ollama":
        return NDJSON_HEADERS
    return JSON_HEADERS if _json_array(request) else SSE_HEADERS


def coalesce(actions: list[Action]) -> list[Action]:
    """Merge sends with no pause or fault between them into one write.

    Clients see the same SSE events (each event is delimited by its blank line, whatever
    the writes), and one write instead of hundreds is most of the server's throughput.
    """
    merged: list[Action] = []
    for action in actions:
        last = merged[-1] if merged else None
        if isinstance(action, Send) and isinstance(last, Send):
            merged[-1] = Send(last.data + action.data, last.chunks + action.chunks)
        else:
            merged.append(action)
    return merged


def _pause(seconds: float) -> list[Action]:
    return [Pause(seconds)] if seconds > 0 else []


def _chunk_frames(
    step: Step, meta: openai_wire.CompletionMeta, field: ReasoningField, request: RequestShape
) -> list[tuple[float, bytes]]:
    """Every chunk frame with the pause before it, in seconds."""
    encoder = openai_wire.ChunkEncoder(meta, request.include_usage)
    deltas = openai_wire.text_deltas(step, field) + openai_wire.tool_call_deltas(step, meta)
    frames = [(ttft_s(step), encoder.frame(b'{"role":"assistant","content":""}'))]
    frames += [(gap_s(step, index), encoder.frame(delta)) for index, delta in enumerate(deltas)]
    frames.append((0.0, encoder.frame(b"{}", step.resolved_finish_reason)))
    if request.include_usage:
        frames.append((0.0, encoder.usage_frame(openai_wire.usage(step, request.messages))))
    return frames


def _error_body(fault: HttpFault | ErrorEventFault, api: Api) -> openai_wire.JSON:
    """Ollama's error body, Anthropic's, Google's, or the OpenAI one (chat completions and
    Responses alike)."""
    if api == "ollama":
        return ollama_wire.error_body(fault.message)
    if api == "anthropic":
        return anthropic_wire.fault_body(fault)
    if api == "gemini":
        if isinstance(fault, HttpFault):
            return gemini_wire.error_body(
                fault.status, fault.message, retry_after=fault.retry_after
            )
        return gemini_wire.in_band_error(fault.message)
    return openai_error_body(fault.message, fault.type, fault.code)


def _malformed(line: str, request: RequestShape) -> bytes:
    """A line that is not JSON, where the format's next frame could come: bare (a `data:`
    line on SSE, an event under a name for the Messages API)."""
    if request.api == "gemini":
        return gemini_wire.malformed(line, request.json_array)
    if request.api == "anthropic":
        return anthropic_wire.malformed_event(line)
    raw = line.encode()
    return raw + b"\n" if request.api == "ollama" else b"data: " + raw + b"\n\n"


def _inject(
    plan: ResponsePlan,
    fault: CutFault | StallFault | MalformedFault | ErrorEventFault,
    request: RequestShape,
    meta: openai_wire.CompletionMeta,
    sent: int,
) -> bool:
    """Add the fault's actions to a stream after `sent` frames; True when the stream ends
    with it."""
    plan.actions.append(FaultFired(describe_fault(fault)))
    if isinstance(fault, CutFault):
        plan.ending = fault.mode
        return True
    if isinstance(fault, StallFault):
        plan.actions.append(Pause(fault.seconds))
        return False
    api = request.api
    if isinstance(fault, MalformedFault):
        plan.actions.append(Send(_malformed(fault.line, request)))
        return False
    if api == "gemini":
        plan.actions.append(Send(gemini_wire.error_frame(fault.message, sent, request.json_array)))
    elif api == "responses":
        plan.actions.append(Send(responses_wire.failure_events(fault, meta, sent)))
    elif api == "anthropic":
        plan.actions.append(Send(anthropic_wire.error_event(fault)))
    else:
        body = _error_body(fault, api)
        frame = ollama_wire.line(body) if api == "ollama" else json_event(body)
        plan.actions.append(Send(frame))
    plan.ending = "eof"
    return True
