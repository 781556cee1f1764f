"""Stream plans served from templates, so that an unpaced stretch costs one join per request.

Two requests for the same step get the same plan but for the completion's meta (ids,
`created`, model) and the prompt's usage. A template is the reference plan
(`response_plan.plan_response`) built once with a sentinel meta and cut at its markers;
serving fills the cuts with the request's meta, escaped as the reference writes it.
Pauses, faults, headers and counts are the reference's, so timing stays exact.

Deliberate choices:
- A template can never serve wrong bytes: its key holds everything the plan depends on
  but the meta, and before it is kept it must equal the reference's plan when filled with
  a second, different meta (and other messages); a key that fails is always served by
  the reference.
- A key is templated the second time it is asked for, so a stream that never repeats
  costs what the reference costs.
- The store is bounded in entries and bytes (flows can be added at run time), LRU out.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import cast

from mock_llm.flows.chunking import REAL_PACING
from mock_llm.flows.model import ReasoningField, Step
from mock_llm.play.response_plan import (
    Action,
    FaultFired,
    Pause,
    RequestShape,
    ResponsePlan,
    Send,
    plan_response,
)
from mock_llm.wire import ollama as ollama_wire
from mock_llm.wire import openai as openai_wire
from servekit.json_codec import dumps

ID_PREFIX = "chatcmpl-"
SUFFIX_MARK = "Zq1mockslotid"
MODEL_MARK = "Zq2mockslotmodel"
CREATED_MARK = 4_000_000_017  # 2096-10-02: ten digits no count or sequence number reaches
SENTINEL = openai_wire.CompletionMeta(ID_PREFIX + SUFFIX_MARK, CREATED_MARK, MODEL_MARK)
CHECK = openai_wire.CompletionMeta(ID_PREFIX + 'ck"\\é\ud800-9', 7, 'm\n"é\\\ud800 x')
"""The second meta a template is checked with: other lengths, and characters JSON escapes."""

DEFAULT_MAX_ENTRIES = 256
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
MAX_SEEN = 4096


def _escaped(text: str) -> bytes:
    """`text` as the reference writes it inside a JSON string (printable ASCII without a
    quote or backslash is written as it is)."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return text.encode()
    return dumps(text)[1:-1]


_Slot = tuple[bytes, Callable[[openai_wire.CompletionMeta], bytes]]
SLOTS: tuple[_Slot, ...] = (
    (SUFFIX_MARK.encode(), lambda meta: _escaped(meta.id.removeprefix(ID_PREFIX))),
    (MODEL_MARK.encode(), lambda meta: _escaped(meta.model)),
    (str(CREATED_MARK).encode(), lambda meta: str(meta.created).encode()),
    (
        ollama_wire.created_at(SENTINEL).encode(),
        lambda meta: ollama_wire.created_at(meta).encode(),
    ),
)
"""Each marker as the sentinel meta writes it, and how a meta writes the same place."""
_MARKS = re.compile(b"|".join(re.escape(mark) for mark, _ in SLOTS))
_SLOT_OF = {mark: index for index, (mark, _) in enumerate(SLOTS)}

Piece = bytes | int
"""A compound's parts: literal bytes, or a slot (an index into SLOTS)."""


@dataclass(frozen=True)
class SendTemplate:
    """One write: `literals` around the compounds (indexes into the template's compounds);
    `uniform` is the one compound they all are, when they are."""

    literals: tuple[bytes, ...]
    compounds: tuple[int, ...]
    uniform: int | None
    chunks: int
    fixed: Send | None  # the write itself, when it holds no marker

    def fill(self, values: list[bytes]) -> Send:
        if self.fixed is not None:
            return self.fixed
        if self.uniform is not None:
            return Send(values[self.uniform].join(self.literals), self.chunks)
        parts = [self.literals[0]]
        for compound, literal in zip(self.compounds, self.literals[1:], strict=True):
            parts += (values[compound], literal)
        return Send(b"".join(parts), self.chunks)


@dataclass(frozen=True)
class Template:
    """A stream plan with its meta cut out."""

    plan: ResponsePlan  # the sentinel plan without its actions: status, headers, ending
    actions: tuple[SendTemplate | Pause | FaultFired, ...]
    compounds: tuple[tuple[Piece, ...], ...]
    size: int

    def fill(self, meta: openai_wire.CompletionMeta) -> ResponsePlan:
        """The plan for `meta`."""
        slots: dict[int, bytes] = {}
        values: list[bytes] = []
        for compound in self.compounds:
            parts: list[bytes] = []
            for piece in compound:
                if isinstance(piece, int):
                    if piece not in slots:
                        slots[piece] = SLOTS[piece][1](meta)
                    parts.append(slots[piece])
                else:
                    parts.append(piece)
            values.append(b"".join(parts))
        actions: list[Action] = [
            a.fill(values) if isinstance(a, SendTemplate) else a for a in self.actions
        ]
        return dataclasses.replace(self.plan, actions=actions)


def cut(plan: ResponsePlan) -> Template:
    """The template of a plan built with the sentinel meta."""
    compounds: dict[tuple[Piece, ...], int] = {}
    actions: list[SendTemplate | Pause | FaultFired] = []
    size = 0
    for action in plan.actions:
        if not isinstance(action, Send):
            actions.append(action)
            continue
        literals, groups = _split(action.data)
        ids = tuple(compounds.setdefault(group, len(compounds)) for group in groups)
        uniform = ids[0] if ids and all(i == ids[0] for i in ids) else None
        fixed = None if ids else action
        actions.append(SendTemplate(tuple(literals), ids, uniform, action.chunks, fixed))
        size += len(action.data)
    ordered = sorted(compounds, key=compounds.__getitem__)
    shell = dataclasses.replace(plan, actions=[])  # the bytes live in the actions only
    return Template(shell, tuple(actions), tuple(ordered), size)


def _split(data: bytes) -> tuple[list[bytes], list[tuple[Piece, ...]]]:
    """`data` cut at its markers: the literals between compounds, and the compounds. The
    markers of one frame (no newline between them) form one compound."""
    literals: list[bytes] = []
    groups: list[tuple[Piece, ...]] = []
    group: list[Piece] = []
    start = 0
    for match in _MARKS.finditer(data):
        between = data[start : match.start()]
        if group and b"\n" not in between:
            group += (between, _SLOT_OF[match.group()])
        else:
            if group:
                groups.append(tuple(group))
            literals.append(between)
            group = [_SLOT_OF[match.group()]]
        start = match.end()
    if group:
        groups.append(tuple(group))
    literals.append(data[start:])
    return literals, groups


_SHAPE_FIELDS = tuple(f.name for f in dataclasses.fields(RequestShape) if f.name != "messages")
"""What of a request shape a key holds: every field but the messages, new ones included."""


def _messages_free(request: RequestShape) -> bool:
    """Whether the stream writes nothing that comes from the messages (checked, too)."""
    return request.api == "openai" and not request.include_usage


class _Key:
    """A store key hashed once: a key holds the step, whose hash (a frozen dataclass's, its
    texts and recorded chunks included) is computed anew on every call, and each request
    looks its key up several times."""

    __slots__ = ("_hash", "value")

    def __init__(self, value: Hashable) -> None:
        self.value = value
        self._hash = hash(value)  # TypeError for a value that cannot be a key

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and other._hash == self._hash and other.value == self.value


_UNKNOWN = object()
"""What the store holds for a key it has no entry for (an entry may be None: refused)."""


class StreamTemplates:
    """A bounded store of templates, filled on a key's second request."""

    def __init__(
        self, max_entries: int = DEFAULT_MAX_ENTRIES, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[_Key, Template | None] = OrderedDict()
        self._seen: OrderedDict[_Key, None] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.refused = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        return self._bytes

    def plan(
        self,
        step: Step,
        meta: openai_wire.CompletionMeta,
        field: ReasoningField,
        request: RequestShape,
        pacing: float = REAL_PACING,
        *,
        admit_at_once: bool = False,
    ) -> ResponsePlan:
        """`plan_response(step, meta, field, request, pacing)`, from a template when it can.

        `admit_at_once` templates a key on its first request (tests use it)."""
        if not request.stream or step.extract is not None or not meta.id.startswith(ID_PREFIX):
            return plan_response(step, meta, field, request, pacing)
        try:
            key = _Key(self._key(step, field, request, pacing))
        except TypeError:  # a request field that cannot be a key: no template
            return plan_response(step, meta, field, request, pacing)
        with self._lock:
            entry = self._entries.get(key, _UNKNOWN)
            if entry is not _UNKNOWN:
                self._entries.move_to_end(key)
            elif not admit_at_once and key not in self._seen:
                self._seen[key] = None
                if len(self._seen) > MAX_SEEN:
                    self._seen.popitem(last=False)
                return plan_response(step, meta, field, request, pacing)
        if entry is _UNKNOWN:
            template = self._build(step, field, request, pacing)
            self._store(key, template)
        else:
            template = cast(Template | None, entry)
        if template is None:
            return plan_response(step, meta, field, request, pacing)
        self.hits += 1
        return template.fill(meta)

    def _key(
        self, step: Step, field: ReasoningField, request: RequestShape, pacing: float
    ) -> Hashable:
        shape = tuple(getattr(request, name) for name in _SHAPE_FIELDS)
        usage = None
        if not _messages_free(request):
            usage = dumps(openai_wire.usage(step, request.messages))
        return (step, field, shape, pacing, usage)

    def _build(
        self, step: Step, field: ReasoningField, request: RequestShape, pacing: float
    ) -> Template | None:
        """The checked template, or None when the check fails."""
        template = cut(plan_response(step, SENTINEL, field, request, pacing))
        check = request
        if _messages_free(request):
            check = dataclasses.replace(request, messages=[{"role": "user", "content": "x" * 9}])
        if template.fill(CHECK) != plan_response(step, CHECK, field, check, pacing):
            self.refused += 1
            return None
        return template

    def _store(self, key: _Key, template: Template | None) -> None:
        size = 0 if template is None else template.size
        if size > self.max_bytes // 8:
            template, size = None, 0  # too big to keep: served by the reference
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = template
            self._bytes += size
            self._seen.pop(key, None)
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, old = self._entries.popitem(last=False)
                self._bytes -= 0 if old is None else old.size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._seen.clear()
            self._bytes = 0


TEMPLATES = StreamTemplates()
"""The process's store: templates depend on nothing but their key, so apps can share it."""


def plan_stream_response(
    step: Step,
    meta: openai_wire.CompletionMeta,
    field: ReasoningField,
    request: RequestShape,
    pacing: float = REAL_PACING,
) -> ResponsePlan:
    """`response_plan.plan_response`, byte for byte, with repeated streams from templates."""
    return TEMPLATES.plan(step, meta, field, request, pacing)
