"""A small typed client for the mock's own endpoints: health, flows, side calls, the journal.

For test suites and conformance kits that drive a chat app against the mock and check what
it saw. Sync, on httpx, one pool per client (`with MockClient(url) as mock: ...`).

Deliberate choices:
- A journal of another schema version (JOURNAL_VERSION) is an error, not a best effort:
  its times may mean something else. Unknown fields of the same version are ignored and
  missing known ones take their default, so additions stay compatible.
- Every error answer raises `MockClientError` with the status, message, code and param.
- A settle read's HTTP timeout is the server-side wait plus the client's own, so the
  server decides when waiting is over.
- What a kit needs of flows is here too (`flow_outcomes`, `outcome_for`), so a kit
  imports this module and nothing else of the mock.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from types import TracebackType
from typing import Any, Self, TypeVar, cast

import httpx

from guardrail.json_shapes import as_object, is_object

# `X as X`: re-exported for kits, what they need of flows besides the endpoints.
from mock_llm.flows.flow_text import FlowFileError as FlowFileError
from mock_llm.flows.flow_text import read_flow_text as read_flow_text
from mock_llm.flows.model import Expect as Expect
from mock_llm.flows.model import outcome_for as outcome_for
from mock_llm.journal.query import DEFAULT_TIMEOUT_MS
from mock_llm.journal.store import JOURNAL_VERSION

DEFAULT_TIMEOUT_S = 30.0
T = TypeVar("T")


class MockClientError(Exception):
    """The mock refused a request, or answered in a shape this client does not read."""

    def __init__(
        self, status: int, message: str, code: str | None = None, param: str | None = None
    ) -> None:
        super().__init__(f"mock_llm answered {status}: {message}")
        self.status = status
        self.message = message
        self.code = code
        self.param = param


@dataclass(frozen=True)
class Health:
    status: str
    flows: int


@dataclass(frozen=True)
class FlowSummary:
    """One flow of `GET /_mock/flows`, without its steps (`step_count` says how many)."""

    name: str
    description: str
    source: str
    """`builtin`, the flow file's path, or `runtime` for a flow added over HTTP."""
    canary: str | None
    step_count: int
    expect: Expect | None
    family: str | None = None
    """The model family whose leak shape the flow plays (`Flow.family`)."""
    elsewhere: Expect | None = None
    """Its outcome for a model of another family (`Flow.elsewhere`)."""
    written_by: tuple[str, ...] = ()
    """Other families whose models write its markup (`Flow.written_by`)."""
    by_family: tuple[tuple[str, Expect], ...] = ()
    """Its outcomes for the models of other named families (`Flow.by_family`)."""


@dataclass(frozen=True)
class FlowsAdded:
    """The answer to `POST /_mock/flows`."""

    added: tuple[str, ...]
    unchanged: tuple[str, ...]
    runtime_flows: int
    max_runtime_flows: int


@dataclass(frozen=True)
class SideCallsAdded:
    """The answer to `POST /_mock/side-calls`."""

    added: tuple[str, ...]
    unchanged: tuple[str, ...]
    patterns: tuple[str, ...]
    """Every rule in force afterwards, in the order they were added."""
    max_patterns: int


@dataclass(frozen=True)
class JournalRecord:
    """One journal entry; every `*_ms` field is on the mock's clock (ms since it started)."""

    seq: int
    path: str
    key: str | None
    flow: str | None
    step: int | None
    steps: int | None
    request_in_turn: int | None
    stream: bool
    status: int
    outcome: str
    error: str | None
    fault: str | None
    chunks_sent: int
    received_ms: float
    first_chunk_ms: float | None
    ended_ms: float | None
    disconnected_ms: float | None
    body: Any
    side_call: bool = False
    """Whether a side-call rule matched: a title or tags call made around the turn of `key`,
    not one of its requests (a journal from before the field reads as False)."""
    api: str = "openai"
    """The wire format of the request: `openai`, `ollama`, `responses`, `anthropic` (the
    Messages API) or `gemini` (any other a newer mock names is kept as it is; a journal from
    before the field reads as `openai`)."""
    request_id: str | None = None
    """The request's `X-Request-Id` header as the mock received it (None without one, or
    from a mock before the field): a proxy in front, such as `python -m guard`, sets it."""


@dataclass(frozen=True)
class JournalRead:
    """A journal read: the entries, oldest first, and the journal's clock and bounds.

    `settled` is None for a plain read; for a settle read, whether the turn had settled
    (False: the wait ran out, and `requests` is what there was then). The journal holds the
    entries from `first_seq` up to (not including) `next_seq`: an entry noted before
    `first_seq` was dropped or cleared (both None from a mock before the fields).
    """

    version: int
    started_at: float
    now_ms: float
    requests: tuple[JournalRecord, ...]
    dropped: int
    capacity: int
    settled: bool | None = None
    first_seq: int | None = None
    next_seq: int | None = None

    def lost_since(self, seq: int) -> bool | None:
        """Whether an entry from `seq` on is no longer held (dropped or cleared); None when
        the mock does not say (a mock before `first_seq`)."""
        return None if self.first_seq is None else self.first_seq > seq


def _build(cls: type[T], data: object) -> T:
    """`cls` from a JSON object whose keys are its fields (extra keys ignored)."""
    if not is_object(data):
        raise MockClientError(200, f"expected a JSON object for {cls.__name__}, got {data!r:.80}")
    names = {f.name for f in fields(cast(Any, cls))}
    try:
        return cls(**{k: v for k, v in data.items() if k in names})
    except TypeError as exc:
        raise MockClientError(200, f"cannot read {cls.__name__}: {exc}") from exc


def journal_read(answer: object) -> JournalRead:
    """A `GET /_mock/requests` answer's JSON, typed (for a client of one's own, such as an
    async one); MockClientError when it is not a journal this client reads."""
    read: dict[str, Any] = as_object(answer) or {}  # its fields are the journal's schema
    if read.get("version") != JOURNAL_VERSION:
        raise MockClientError(
            200,
            f"journal schema version {read.get('version')!r}; "
            f"this client reads version {JOURNAL_VERSION}",
        )
    records = tuple(_build(JournalRecord, entry) for entry in read["requests"])
    return _build(JournalRead, {**read, "requests": records})


class MockClient:
    """The mock's own endpoints, typed. `base_url` is the mock's URL without `/v1`."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._timeout = timeout
        self._http = httpx.Client(base_url=base_url, timeout=timeout, transport=transport)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def health(self) -> Health:
        return _build(Health, self._json(self._http.get("/healthz")))

    def flows(self) -> list[FlowSummary]:
        listing = cast(dict[str, Any], self._json(self._http.get("/_mock/flows")))
        return [self._flow(flow) for flow in listing["flows"]]

    def add_flows(self, flows: str | Mapping[str, Any]) -> FlowsAdded:
        """Add flows at run time: flow-file YAML text, or its `{"flows": {...}}` mapping."""
        if isinstance(flows, str):
            content, kind = flows.encode(), "application/yaml"
        else:
            content, kind = json.dumps(flows, ensure_ascii=False).encode(), "application/json"
        response = self._http.post("/_mock/flows", content=content, headers={"content-type": kind})
        answer = cast(dict[str, Any], self._json(response))
        return FlowsAdded(
            added=tuple(answer["added"]),
            unchanged=tuple(answer["unchanged"]),
            runtime_flows=answer["runtime_flows"],
            max_runtime_flows=answer["max_runtime_flows"],
        )

    def side_calls(self) -> tuple[str, ...]:
        """The side-call rules in force, in the order they were added."""
        listing = cast(dict[str, Any], self._json(self._http.get("/_mock/side-calls")))
        return tuple(listing["patterns"])

    def add_side_calls(self, patterns: Iterable[str]) -> SideCallsAdded:
        """Add side-call rules (regular expressions); rules already there stay unchanged."""
        body = {"patterns": list(patterns)}
        answer = cast(dict[str, Any], self._json(self._http.post("/_mock/side-calls", json=body)))
        return SideCallsAdded(
            added=tuple(answer["added"]),
            unchanged=tuple(answer["unchanged"]),
            patterns=tuple(answer["patterns"]),
            max_patterns=answer["max_patterns"],
        )

    def requests(
        self,
        key: str | None = None,
        *,
        flow: str | None = None,
        settle_ms: int | None = None,
        timeout_ms: int | None = None,
        side_calls: str | None = None,
    ) -> JournalRead:
        """The journal (for `key`, `flow`); with `settle_ms`, once the KEY's turn settled.

        `side_calls` is `include` (the mock's default), `exclude` (a turn's own requests)
        or `only`.
        """
        params: dict[str, str | int] = {}
        for name, value in (
            ("key", key),
            ("flow", flow),
            ("settle_ms", settle_ms),
            ("timeout_ms", timeout_ms),
            ("side_calls", side_calls),
        ):
            if value is not None:
                params[name] = value
        wait_s = (timeout_ms if timeout_ms is not None else DEFAULT_TIMEOUT_MS) / 1000
        timeout = self._timeout + (wait_s if settle_ms is not None else 0.0)
        response = self._http.get("/_mock/requests", params=params, timeout=timeout)
        return journal_read(self._json(response))

    def clear(self) -> None:
        """Empty the journal (its sequence numbers go on)."""
        self._json(self._http.delete("/_mock/requests"))

    @staticmethod
    def _flow(flow: dict[str, Any]) -> FlowSummary:
        expect, elsewhere = flow.get("expect"), flow.get("elsewhere")
        return FlowSummary(
            name=flow["name"],
            description=flow["description"],
            source=flow["source"],
            canary=flow["canary"],
            step_count=len(flow["steps"]),
            expect=_build(Expect, expect) if expect is not None else None,
            family=flow.get("family"),
            elsewhere=_build(Expect, elsewhere) if elsewhere is not None else None,
            written_by=tuple(str(name) for name in flow.get("written_by") or ()),
            by_family=tuple(
                (family, _build(Expect, want))
                for family, want in (as_object(flow.get("by_family")) or {}).items()
            ),
        )

    @staticmethod
    def _json(response: httpx.Response) -> object:
        if response.is_success:
            return response.json() if response.content else None
        try:
            error = response.json()["error"]
            message, code, param = error["message"], error.get("code"), error.get("param")
        except (ValueError, KeyError, TypeError):
            message, code, param = response.text[:200], None, None
        raise MockClientError(response.status_code, message, code, param)


def flow_outcomes(text: str, source: str) -> dict[str, Expect | None]:
    """Each flow of a flow file's YAML `text`, by name, with the outcome its `expect` block
    states (None where it states none); FlowFileError, naming `source` and the line, for an
    invalid file. The parser (and YAML) loads on the first call, not with the client."""
    from mock_llm.flows.flow_file import parse_flows

    return {name: flow.expect for name, flow in parse_flows(text, source=source).items()}
