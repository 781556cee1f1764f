"""Ollama's native API (`POST /api/chat`, `POST /api/generate`) through the guardrail. Pure.

`OllamaStreamGuard` takes an NDJSON stream's lines (cut by `servekit.ndjson.NdjsonLines`)
and says what the client gets for each: the line as it came when nothing changed, the line
with its text filtered, or nothing; a reply needing the one recovery (G2) goes on through
a second guard (`follows=`) so the client sees one `done: true` line. `OllamaWholeGuard`
filters a whole answer; `CHAT` and `GENERATE` say where each endpoint's text is.

Deliberate choices:
- Only the answer text is filtered; `thinking`, `tool_calls` and the rest pass untouched
  (G9, G12). A reply that carried a tool call needs no recovery. Reasoning the filter
  routes out of the text (gpt-oss's analysis channel written as text) joins `thinking`.
- A recovery that shows nothing ends with Ollama's own `{"error": MALFORMED_REPLY}` line
  (the client raises `ResponseError`); with nothing sent yet, the route sends a 502.
- A body that ends or breaks before `done: true` gets an error line after the held tail,
  since a client would otherwise show a short answer as whole.
- Lines keep their own identity (`created_at`; both requests name the same model).
- A line that is not a JSON object goes out as it came; a line the guard writes is
  compact JSON (`servekit.json_codec.dumps`). A line that is not UTF-8 is read, and goes
  out, with U+FFFD for each invalid sequence, as every route reads its stream: it is
  filtered, never passed on unread.
- /api/generate's recovery puts the correction into `system`; a `raw: true` request
  bypasses the template, so there it is a plain second try.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from guard.wire.reply import Reply, WholeReply
from guardrail.json_shapes import as_object, is_array, is_object, objects
from guardrail.policy import MALFORMED_REPLY, RoundFilter, system_with_correction, with_correction
from servekit.json_codec import dumps, parse_object, utf8_repaired
from servekit.ndjson import NdjsonLines
from servekit.openai_chunks import append_text

__all__ = [
    "CHAT",
    "GENERATE",
    "NdjsonLines",
    "OllamaApi",
    "OllamaStreamGuard",
    "OllamaWholeGuard",
    "error_line",
    "own_error_text",
    "upstream_error_text",
]

_SILENT_KEYS = frozenset({"model", "created_at", "done", "role"})
_EMPTY: tuple[object, ...] = (None, "", [], {})


@dataclass(frozen=True)
class OllamaApi:
    """Where one endpoint's answer text is: `message.content` (chat) or `response`."""

    name: str
    message_key: str | None  # the object that holds the text; None: the line itself
    text_key: str

    def holder(self, line: dict[str, Any]) -> dict[str, Any] | None:
        if self.message_key is None:
            return line
        return as_object(line.get(self.message_key))

    def recovery_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The one recovery request: the same body, the correction in, no tools (G2)."""
        recovery = {k: v for k, v in body.items() if k != "tools"}
        if self.message_key is None:  # /api/generate: the correction goes into `system`
            system = body.get("system")
            recovery["system"] = system_with_correction(system if isinstance(system, str) else None)
            return recovery
        messages = body.get("messages")
        if is_array(messages):
            recovery["messages"] = with_correction(objects(messages))
        return recovery


CHAT = OllamaApi("chat", "message", "content")
GENERATE = OllamaApi("generate", None, "response")


def error_line(message: str) -> bytes:
    """Ollama's in-band error: one NDJSON line `{"error": message}`."""
    return dumps({"error": message}) + b"\n"


def own_error_text(line: bytes) -> str | None:
    """The message of an error line of the guard's own, `{"error": "..."}` and nothing else."""
    value = parse_object(line) if line.startswith(b'{"error"') else None
    if value is None or set(value) != {"error"} or not isinstance(value["error"], str):
        return None
    return value["error"]


def upstream_error_text(raw: bytes, status: int) -> str:
    """The message of an upstream error body: Ollama's `{"error": "..."}`, or the OpenAI
    shape `{"error": {"message": "..."}}` of an Ollama-compatible server."""
    error = (parse_object(raw) or {}).get("error")
    if is_object(error):
        error = error.get("message")
    return error if isinstance(error, str) and error else f"The model server answered {status}."


@dataclass
class OllamaStreamGuard(Reply):
    """The guardrail over one upstream NDJSON stream (see the module docstring)."""

    api: OllamaApi = CHAT
    finished: bool = False  # its done line, an error line or its end was seen: read no more
    recovering: bool = False  # it ended needing the recovery: its done line was not sent
    _filter: RoundFilter = field(init=False)
    _head: dict[str, Any] = field(default_factory=dict[str, Any], init=False)

    def __post_init__(self) -> None:
        self._filter = self.new_filter()

    # --- what the client gets -----------------------------------------------------------

    def line(self, raw: bytes) -> list[bytes]:
        """What the client gets for one line of the upstream stream."""
        if self.finished:
            return []
        parsed = parse_object(raw)
        if parsed is None and (repaired := utf8_repaired(raw)) is not raw:
            raw, parsed = repaired, parse_object(repaired)
        if parsed is None:
            return [raw]  # not ours to judge: the client's parser will say
        if parsed.get("error"):
            self.finished = True
            return [*self._tail(), raw]
        holder = self.api.holder(parsed)
        self._head = {k: parsed[k] for k in ("model", "created_at") if k in parsed}
        content = holder.get(self.api.text_key) if holder is not None else None
        text = content if isinstance(content, str) else ""
        if holder is not None and holder.get("tool_calls"):
            self.tool_calls = True
        shown = self._filter.feed(text) if text else ""
        done = parsed.get("done") is True
        if done:
            self.finished = True
            shown += self._filter.flush()  # the reply ends here: what was held is text
            if self.wants_recovery:
                self.recovering = True
                return []
            if self.malformed:
                return [error_line(MALFORMED_REPLY)]
        thought = self._filter.take_reasoning()
        if shown == text and not thought:
            return [raw]
        if holder is None:  # a done line with no message: the tail gets its own line
            return [self._text_line(shown, thought), raw]
        holder[self.api.text_key] = shown
        if thought:
            append_text(holder, "thinking", thought)
        if not done and _says_nothing(parsed, self.api):
            return []
        return [dumps(parsed) + b"\n"]

    def end(self, cut_off: str) -> list[bytes]:
        """The rest of the client's stream once the upstream body ended or broke: nothing
        after a done or error line; else (a cut reply) what the filter held, then an
        error line saying `cut_off`."""
        if self.finished:
            return []
        self.finished = True
        return [*self._tail(), error_line(cut_off)]

    # --- inside ---------------------------------------------------------------------------

    def _tail(self) -> list[bytes]:
        tail = self._filter.flush()
        thought = self._filter.take_reasoning()
        return [self._text_line(tail, thought)] if tail or thought else []

    def _text_line(self, text: str, thought: str) -> bytes:
        holder: dict[str, Any] = {self.api.text_key: text}
        if thought:
            append_text(holder, "thinking", thought)
        if self.api.message_key is None:
            line: dict[str, Any] = {**self._head, **holder, "done": False}
        else:
            message = {"role": "assistant", **holder}
            line = {**self._head, self.api.message_key: message, "done": False}
        return dumps(line) + b"\n"


@dataclass
class OllamaWholeGuard(WholeReply):
    """The guardrail over one whole (not streamed) answer."""

    api: OllamaApi = CHAT

    def filter(self, answer: dict[str, Any]) -> bool:
        """Filter `answer`'s text in place, as one whole stream; whether it changed."""
        holder = self.api.holder(answer)
        if holder is None:
            return False
        if holder.get("tool_calls"):
            self.tool_calls = True
        content = holder.get(self.api.text_key)
        if not isinstance(content, str):
            return False
        shown, thought = self.whole_parts(content)
        if shown == content and not thought:
            return False
        holder[self.api.text_key] = shown
        if thought:
            append_text(holder, "thinking", thought)
        return True


def _says_nothing(line: dict[str, Any], api: OllamaApi) -> bool:
    """Whether a line that is not the last says nothing once its text was taken out."""
    holder = api.holder(line)
    fields = [*line.items(), *(holder.items() if holder is not None and holder is not line else ())]
    return all(
        key in _SILENT_KEYS or key == api.message_key or value in _EMPTY for key, value in fields
    )
