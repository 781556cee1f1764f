"""The Open WebUI filter function's own code, written once: the template of the pasteable file.

Open WebUI runs a function file with its own interpreter, where our packages are not
installed, so the pasted file (scaffold_guard_filter.py) is this module with the guardrail
library inlined in place of its imports (build.py). Here it imports the library, so it is
type-checked and tested like any module. `stream` filters each reply's `delta.content` per
choice; `outlet` repairs the saved assistant messages; a markup-only reply, which a filter
cannot ask again, gets MALFORMED_REPLY as its text. See docs/integrations.md.

Deliberate choices:
- Replies are told apart by Open WebUI's message id first (some servers change the
  completion `id` from chunk to chunk), else the completion's `id`, and the choice index.
- At most MAX_OPEN_REPLIES are open; past that the least recently fed is forgotten, since
  a stopped stream never finishes and every Stop would otherwise leak a filter.
- Nothing raises: Open WebUI drops an event whose filter raised, which would lose the text.
- The `profiles` valve is `auto` by default and follows every name a reply goes by (Open
  WebUI's model id is often a person's alias); chosen at its first chunk. A valve saved
  empty before `auto` existed keeps meaning `none`, as it did then.
- Non-text content is filtered as the text Open WebUI would make of it (`f'{value}'`).
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from typing import Any

from pydantic import BaseModel, Field, field_validator

from guardrail.json_shapes import JSONObject, as_array, as_object, is_array, is_object, objects
from guardrail.model_profiles import ProfileChoice, parse_profiles
from guardrail.patterns import Registry
from guardrail.policy import MALFORMED_REPLY, RoundFilter, needs_recovery
from guardrail.registries import PROFILES

MAX_OPEN_REPLIES = 1024
"""How many replies may stream through the filter at once before the oldest is forgotten."""

ReplyKey = tuple[str, str, int]
"""(what names the reply: "message" or "completion", that name, the choice index)."""

TextPart = dict[str, Any]
"""An output item's text part, its `text` found to be a string (and kept one)."""


SETTINGS = ("auto", "none", "all")
"""The valve's words besides profile names (guardrail.model_profiles.parse_profiles)."""


def valve_words(text: str) -> str:
    """A valve's text as parse_profiles reads it: comma- or space-separated, any case (a
    valve saved before `auto` existed may hold `hermes mistral`)."""
    return ",".join(text.replace(",", " ").lower().split())


def profile_choice(text: str) -> ProfileChoice:
    """The valve's setting; an unknown word is skipped, not raised (the valve refuses it
    when saved, so only a hand-edited database could hold one)."""
    words = valve_words(text).split(",")
    try:
        return parse_profiles(",".join(w for w in words if w in PROFILES or w in SETTINGS))
    except ValueError:  # a setting mixed with names, `auto,hermes`: the names alone
        return parse_profiles(",".join(w for w in words if w in PROFILES))


def model_names(named: object, model: object) -> tuple[object, ...]:
    """The names an answer goes by: the chunk's or body's `model` (`named`: what the server
    or Open WebUI calls it) and Open WebUI's model (`__model__`): its id, often an alias a
    person chose, and the base model id of a workspace model built on another."""
    info = _get(model, "info")
    return (_get(named, "model"), _get(model, "id"), _get(info, "base_model_id"))


class _Reply:
    """One streamed choice of one reply: its filter, and whether it carried tool calls."""

    __slots__ = ("filter", "tool_calls")

    def __init__(self, registry: Registry) -> None:
        self.filter = RoundFilter(registry)
        self.tool_calls = 0

    def end(self, *, tool_call_finish: bool) -> tuple[str, bool]:
        """The held tail, and whether the whole reply was markup with no tool call (so its
        user must read the malformed-reply copy)."""
        tail = self.filter.flush()
        tool_calls = self.tool_calls + int(tool_call_finish)
        stripped, visible = self.filter.stripped_chars, self.filter.visible
        return tail, needs_recovery(stripped_chars=stripped, visible=visible, tool_calls=tool_calls)


class _OpenReplies:
    """The replies streaming now, least recently fed first, at most `bound` of them."""

    def __init__(self, bound: int) -> None:
        self._bound = bound
        self._replies: OrderedDict[ReplyKey, _Reply] = OrderedDict()

    def __len__(self) -> int:
        return len(self._replies)

    def get(self, key: ReplyKey) -> _Reply | None:
        reply = self._replies.get(key)
        if reply is not None:
            self._replies.move_to_end(key)
        return reply

    def start(self, key: ReplyKey, registry: Registry) -> _Reply:
        reply = self._replies[key] = _Reply(registry)
        while len(self._replies) > self._bound:
            self._replies.popitem(last=False)
        return reply

    def pop(self, key: ReplyKey) -> None:
        self._replies.pop(key, None)

    def pop_message(self, message_id: str) -> list[_Reply]:
        """The open replies of an Open WebUI message, lowest choice first, now closed."""
        keys = sorted(k for k in self._replies if k[:2] == ("message", message_id))
        return [self._replies.pop(k) for k in keys]


class Filter:
    """Keeps raw tool-call markup out of what Open WebUI shows and saves (module docstring)."""

    class Valves(BaseModel):
        enabled: bool = Field(
            default=True, description="Strip raw tool-call markup from answers (off: pass all)."
        )
        profiles: str = Field(
            default="auto",
            description=(
                "Markup stripped besides LFM2's: auto (by the model's name), none, all, or "
                "profiles, comma-separated: " + ", ".join(PROFILES)
            ),
        )
        priority: int = Field(
            default=0, description="Filter order: Open WebUI runs lower priorities first."
        )

        @field_validator("profiles")
        @classmethod
        def known_profiles(cls, value: str) -> str:
            parse_profiles(valve_words(value))  # raises ValueError naming the known ones
            return value

    def __init__(self) -> None:
        self.valves = self.Valves()
        self._open = _OpenReplies(MAX_OPEN_REPLIES)

    def stream(
        self, event: object, __metadata__: object = None, __model__: object = None
    ) -> object:
        """One event of a streamed reply, its choices' content filtered in place."""
        if not self.valves.enabled or not is_object(event):
            return event
        choices = event.get("choices")
        if is_array(choices):
            name = _reply_name(event, __metadata__)
            models = model_names(event, __model__)
            for position, choice in enumerate(choices):
                if is_object(choice):
                    self._filter_choice(name, position, choice, models)
        return event

    def outlet(self, body: object, __metadata__: object = None, __model__: object = None) -> object:
        """The finished chat: every assistant message's content and output text repaired."""
        if not self.valves.enabled or not is_object(body):
            return body
        messages = body.get("messages")
        if not is_array(messages):
            return body
        message_id = _string(_get(__metadata__, "message_id")) or _string(body.get("id"))
        unfinished = self._open.pop_message(message_id) if message_id else []
        registry = profile_choice(self.valves.profiles).registry(*model_names(body, __model__))
        for message in objects(messages):
            if message.get("role") != "assistant":
                continue
            tail = ""
            if unfinished and message.get("id") == message_id:
                tail, malformed = unfinished[0].end(tool_call_finish=False)
                tail = MALFORMED_REPLY if malformed else tail  # as its finish chunk would
            _repair_message(message, registry, tail)
        return body

    def _filter_choice(
        self, name: tuple[str, str], position: int, choice: JSONObject, models: tuple[object, ...]
    ) -> None:
        index = choice.get("index")
        index = index if type(index) is int else position
        key: ReplyKey = (*name, index)
        delta = as_object(choice.get("delta"))
        text = _text(delta.get("content")) if delta is not None else None
        calls = delta is not None and bool(delta.get("tool_calls"))
        finish = choice.get("finish_reason")
        reply = self._open.get(key)
        if reply is None:
            if text is None and not calls:
                return  # nothing of this reply has been text: nothing held, nothing to say
            registry = profile_choice(self.valves.profiles).registry(*models)
            reply = self._open.start(key, registry)  # the reply keeps it to its end
        reply.tool_calls += calls
        shown = reply.filter.feed(text) if text else ""
        if finish is not None:
            self._open.pop(key)
            tail, malformed = reply.end(tool_call_finish=finish == "tool_calls")
            shown = MALFORMED_REPLY if malformed else shown + tail
        thought = reply.filter.take_reasoning()
        if text is None and not shown and not thought:
            return
        if delta is None:
            delta = choice["delta"] = {}
        delta["content"] = shown
        if thought:  # gpt-oss's analysis channel: Open WebUI shows it as reasoning
            before = delta.get("reasoning_content")
            delta["reasoning_content"] = (before if isinstance(before, str) else "") + thought


def _reply_name(chunk: JSONObject, metadata: object) -> tuple[str, str]:
    message_id = _string(_get(metadata, "message_id"))
    if message_id:
        return ("message", message_id)
    return ("completion", _string(chunk.get("id")))


def _get(mapping: object, key: str) -> object:
    return (as_object(mapping) or {}).get(key)


def _string(value: object) -> str:
    return value if isinstance(value, str) else ""


def _text(content: object) -> str | None:
    """A delta's content as the text Open WebUI shows (None: no text in this delta)."""
    if isinstance(content, str):
        return content
    return f"{content}" if content else None


class _Texts:
    """Some whole texts of one message, each through a fresh filter, and what that took."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.stripped = 0
        self.visible = False

    def repair(self, text: str) -> str:
        whole = RoundFilter(self.registry)
        shown = whole.feed(text) + whole.flush()
        self.stripped += whole.stripped_chars
        self.visible = self.visible or whole.visible
        return shown

    def all_markup(self, tool_calls: int) -> bool:
        return needs_recovery(
            stripped_chars=self.stripped, visible=self.visible, tool_calls=tool_calls
        )


def _repair_message(message: JSONObject, registry: Registry, tail: str) -> None:
    """Repair one assistant message in place, after appending `tail` (what its unfinished
    stream still had to show) to its content and its output."""
    parts = _text_parts(message.get("output"))
    if tail:
        _append(message, parts, tail)
    text = _Texts(registry)
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = text.repair(content)
    output = _Texts(registry)
    for part in parts:
        part["text"] = output.repair(part["text"])
    tool_calls = _tool_calls(message)
    if text.all_markup(tool_calls) or output.all_markup(tool_calls):
        _show_malformed(message, parts)


def _append(message: JSONObject, parts: list[TextPart], tail: str) -> None:
    content = message.get("content")
    if isinstance(content, str) or content is None:
        message["content"] = (content or "") + tail
    output = message.get("output")
    if parts:
        parts[-1]["text"] += tail
    elif is_array(output):
        parts.append(_new_text_item(output, tail))


def _text_parts(output: object) -> list[TextPart]:
    """The text parts of a message's `message` output items, in order (reasoning, tool
    calls and their results are other item types, left alone)."""
    parts: list[TextPart] = []
    for item in objects(output):
        if item.get("type") != "message":
            continue
        parts += [
            part for part in objects(item.get("content")) if isinstance(part.get("text"), str)
        ]
    return parts


def _tool_calls(message: JSONObject) -> int:
    count = len(as_array(message.get("tool_calls")))
    items = as_array(message.get("output"))
    return count + sum(_get(item, "type") == "function_call" for item in items)


def _show_malformed(message: JSONObject, parts: list[TextPart]) -> None:
    """The message reads the malformed-reply copy, in its content and its output."""
    message["content"] = MALFORMED_REPLY
    for number, part in enumerate(parts):
        part["text"] = MALFORMED_REPLY if number == 0 else ""
    output = message.get("output")
    if not parts and is_array(output):
        _new_text_item(output, MALFORMED_REPLY)


def _new_text_item(output: list[object], text: str) -> TextPart:
    """A `message` output item holding `text` appended to `output`; its text part."""
    part: TextPart = {"type": "output_text", "text": text}
    item = {"type": "message", "id": f"msg_{uuid.uuid4().hex}", "status": "completed"}
    output.append({**item, "role": "assistant", "content": [part]})
    return part
