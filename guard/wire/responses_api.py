"""The OpenAI Responses API's objects as the guard proxy reads and writes them. Pure.

Shared by the streamed guard, the whole one and the route: `is_tool_call` (G12), the
answer texts rewritten and read back (`rewrite_texts`, `output_text_of`,
`rewrite_output_text`), `recovery_body` (G2), and SSE events read and written (`typed`,
`event_bytes`, `raw_event`; the Messages API's stream uses them too).

Deliberate choices:
- Every item that is not a `message` or `reasoning` counts as a tool call, so a reply with
  an item the guard does not know is never retried.
- Reasoning the filter routes out of a message's text (gpt-oss's analysis channel written
  as text) becomes a `reasoning` item right after that message item, streamed or whole:
  in a stream the message item has gone out by then, and no index already sent moves.
- The correction goes where the request keeps its system message (`instructions`, else
  the first `system`/`developer` input message, else new `instructions`), so the model
  never sees a second one; tool fields are removed, the rest sent as it came.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from guardrail.json_shapes import JSONObject, as_array, is_array, is_object, objects
from guardrail.patterns import Registry
from guardrail.policy import CORRECTION_INSTRUCTION, scrub, with_correction
from servekit.json_codec import parse_object
from servekit.sse import SseEvent

TOOL_FIELDS = ("tools", "tool_choice", "parallel_tool_calls")
ANSWER_ITEMS = ("message", "reasoning")
SYSTEM_ROLES = ("system", "developer")

TextOf = Callable[[int, JSONObject, int, str], str]
"""The text an answer part shows: (the item's position in `output`, the item, the part's
content index, the part's text as it came) -> the text."""


def is_tool_call(item: JSONObject) -> bool:
    return item.get("type") not in ANSWER_ITEMS


def is_message(item: object) -> bool:
    return is_object(item) and item.get("type") == "message"


def text_parts(item: JSONObject) -> list[tuple[int, JSONObject, str]]:
    """A message item's `output_text` parts whose text is a string, with their indexes and
    texts."""
    if item.get("type") != "message":
        return []
    return [
        (index, part, text)
        for index, part in _indexed_objects(item.get("content"))
        if part.get("type") == "output_text" and isinstance(text := part.get("text"), str)
    ]


def output_text_of(output: object) -> str:
    """The answer texts of `output` (a response's item list) joined, as the SDK joins them."""
    return "".join(text for item in objects(output) for _, _, text in text_parts(item))


def rewrite_texts(output: object, text_of: TextOf) -> bool:
    """Set each answer part's text in `output` to `text_of(...)`; whether any changed."""
    changed = False
    for position, item in _indexed_objects(output):
        for index, part, text in text_parts(item):
            shown = text_of(position, item, index, text)
            if shown != text:
                part["text"] = shown
                changed = True
    return changed


def reasoning_item(message_id: object, text: str) -> dict[str, Any]:
    """A `reasoning` item holding reasoning the filter routed out of a message's text
    (gpt-oss's analysis channel written as text); its id is made from the message's."""
    item_id = f"rs_{message_id}" if isinstance(message_id, str) else "rs_guard"
    content = [{"type": "reasoning_text", "text": text}]
    return {"id": item_id, "type": "reasoning", "summary": [], "content": content,
            "status": "completed"}  # fmt: skip


def with_items_after(
    output: list[Any], item_after: Callable[[int, JSONObject], dict[str, Any] | None]
) -> list[Any]:
    """`output` with `item_after(position, item)` inserted right after each item it gives
    one for (the reasoning routed out of a message's text, after that message)."""
    items: list[Any] = []
    for position, item in enumerate(output):
        items.append(item)
        if is_object(item) and (extra := item_after(position, item)) is not None:
            items.append(extra)
    return items


def rewrite_output_text(response: dict[str, Any], joined: str, registry: Registry) -> bool:
    """Set a top-level `output_text` (the API leaves it to the SDK to compute; some servers
    send it) to the answer texts of `response["output"]` joined, as the SDK would compute
    it, when it was `joined` (those texts as they came); any other string there is scrubbed
    on its own. Whether it changed."""
    top = response.get("output_text")
    if not isinstance(top, str):
        return False
    shown = output_text_of(response.get("output")) if top == joined else scrub(top, registry)
    if shown == top:
        return False
    response["output_text"] = shown
    return True


def recovery_body(body: dict[str, Any]) -> dict[str, Any]:
    """The one recovery request: the same body, the correction added, no tools (G2)."""
    recovery = {k: v for k, v in body.items() if k not in TOOL_FIELDS}
    instructions = body.get("instructions")
    items = body.get("input")
    if isinstance(instructions, str) and instructions.strip():
        recovery["instructions"] = f"{instructions}\n\n{CORRECTION_INSTRUCTION}"
    elif is_array(items) and _has_system_message(items):
        messages = objects(items)  # every member: _has_system_message found no other
        recovery["input"] = with_correction(messages, roles=SYSTEM_ROLES, part_type="input_text")
    else:
        recovery["instructions"] = CORRECTION_INSTRUCTION
    return recovery


def _has_system_message(items: list[object]) -> bool:
    """Whether every input item is an object (with_correction reads them all) and one is a
    system or developer message."""
    found = False
    for item in items:
        if not is_object(item):
            return False
        found = found or item.get("role") in SYSTEM_ROLES
    return found


def typed(event: SseEvent) -> tuple[JSONObject, str] | None:
    """An event's data as a JSON object, and its type (the data's `type`, else the name on
    its `event:` line); None when the data is not a JSON object (not ours to judge)."""
    parsed = parse_object(event.data)
    if parsed is None:
        return None
    kind = parsed.get("type")
    return parsed, kind if isinstance(kind, str) else event.event or ""


def read_or_pass(
    event: SseEvent, release: Callable[[list[bytes]], None]
) -> tuple[list[bytes], tuple[JSONObject, str] | None]:
    """The start of a stream guard's answer to one upstream event, and the event read
    (`typed`): an event that is not ours to judge releases what the guard holds (`release`
    appends it) and goes out as it came, and the read is None; the client's parser will say."""
    out: list[bytes] = []
    read = typed(event)
    if read is None:
        release(out)
        out.append(raw_event(event.event, event.data))
    return out, read


def event_bytes(event: dict[str, Any]) -> bytes:
    """One event as the guard writes it: its type on the `event:` line, compact JSON."""
    try:
        data = json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:  # a lone surrogate (JSON can say "\\ud800"): escaped again
        data = json.dumps(event, separators=(",", ":")).encode()
    kind = event.get("type")
    if isinstance(kind, str) and kind and kind.isascii() and kind.isprintable():
        return b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n"
    return b"data: " + data + b"\n\n"


def raw_event(name: str | None, data: str) -> bytes:
    """One event as the upstream sent it: its `event:` line if it had one, its data lines."""
    head = b"" if name is None else b"event: " + name.encode() + b"\n"
    lines = b"".join(b"data: " + line.encode() + b"\n" for line in data.split("\n"))
    return head + lines + b"\n"


def _indexed_objects(value: object) -> list[tuple[int, JSONObject]]:
    """The members of `value` that are JSON objects, with their positions in it (none when
    it is no array)."""
    return [(position, item) for position, item in enumerate(as_array(value)) if is_object(item)]
