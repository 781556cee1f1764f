"""Drive an Open WebUI filter function as Open WebUI 0.12.4 does, without Open WebUI.

Two implementations of the same `Filter` are under test: the template module (it imports
the guardrail library) and the generated pasteable file, loaded as Open WebUI's
`load_function_module_by_id` loads a function: a fresh module object, registered in
sys.modules while the text is executed in its namespace, then taken out again.
"""

from __future__ import annotations

import copy
import sys
import types
import uuid
from typing import Any

from scaffold_guard.integrations.openwebui import build, filter_template


def pasted_module() -> types.ModuleType:
    """The generated file as Open WebUI runs it: `exec(content, module.__dict__)`."""
    name = f"function_scaffold_guard_{uuid.uuid4().hex}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        exec(build.OUT.read_text(encoding="utf-8"), module.__dict__)
    finally:
        sys.modules.pop(name, None)
    return module


IMPLEMENTATIONS = {"template": lambda: filter_template, "pasted": pasted_module}


def chunk(
    content: object = None,
    *,
    finish: str | None = None,
    index: int = 0,
    completion: str = "chatcmpl-1",
    model: str = "m",
    **delta: Any,
) -> dict[str, Any]:
    """A chat completion chunk as Open WebUI decodes it from the SSE line (`model`: the
    name the server reports)."""
    if content is not None:
        delta["content"] = content
    choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
    return {
        "id": completion,
        "object": "chat.completion.chunk",
        "created": 1,
        "model": model,
        "choices": [choice],
    }


def stream_of(pieces: list[str], finish: str = "stop", **meta: Any) -> list[dict[str, Any]]:
    """The role chunk, one chunk per piece, the finish chunk: how an OpenAI server streams."""
    return [
        chunk("", role="assistant", **meta),
        *(chunk(piece, **meta) for piece in pieces),
        chunk(finish=finish, **meta),
    ]


def metadata(message_id: str | None) -> dict[str, Any]:
    """What Open WebUI passes as `__metadata__` for a chat's message."""
    return {"chat_id": "chat-1", "message_id": message_id, "session_id": "s"}


def play(
    filter_: Any,
    events: list[dict[str, Any]],
    message_id: str | None = "msg-1",
    model: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Each event through `stream`, as the middleware calls it (`model`: its `__model__`);
    what came back."""
    meta = metadata(message_id)
    return [filter_.stream(event, __metadata__=meta, __model__=model) for event in events]


def webui_model(model_id: str, base_model_id: str | None = None) -> dict[str, Any]:
    """Open WebUI's `__model__`: a connection's model, or a workspace model built on
    `base_model_id` (open_webui/utils/models.py)."""
    model: dict[str, Any] = {"id": model_id, "name": model_id, "object": "model"}
    if base_model_id is not None:
        model["info"] = {"id": model_id, "base_model_id": base_model_id, "meta": {}}
    return model


def shown(events: list[Any], index: int = 0) -> str:
    """The content the events carry for choice `index`, joined (what the page shows)."""
    text: list[str] = []
    for event in events:
        for choice in event.get("choices") or []:
            if choice.get("index", 0) == index:
                content = (choice.get("delta") or {}).get("content")
                text.append(content if isinstance(content, str) else "")
    return "".join(text)


def without_content(events: list[Any]) -> list[Any]:
    """The events with every delta's content taken out: what the filter must not touch."""
    out = copy.deepcopy(events)
    for event in out:
        if isinstance(event, dict):
            for choice in event.get("choices") or []:
                if isinstance(choice, dict) and isinstance(choice.get("delta"), dict):
                    choice["delta"].pop("content", None)
    return out


def saved_message(text: str, message_id: str = "msg-1", **fields: Any) -> dict[str, Any]:
    """An assistant message as Open WebUI's outlet receives it: content and output items."""
    output = [
        {
            "type": "message",
            "id": "msg_out1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        }
    ]
    return {"id": message_id, "role": "assistant", "content": text, "output": output, **fields}


def outlet_body(
    *messages: dict[str, Any], message_id: str = "msg-1", model: str = "m"
) -> dict[str, Any]:
    """The body Open WebUI's outlet_filter_handler passes to a filter's outlet (`model`:
    Open WebUI's id of the chat's model)."""
    user = {"id": "u1", "role": "user", "content": "When do backups run?"}
    return {
        "model": model,
        "messages": [user, *messages],
        "chat_id": "chat-1",
        "session_id": "s",
        "id": message_id,
    }


def output_text(message: dict[str, Any]) -> str:
    """The text of a message's `message` output items, as the page reads it."""
    return "".join(
        part.get("text", "")
        for item in message.get("output") or []
        if item.get("type") == "message"
        for part in item.get("content") or []
    )
