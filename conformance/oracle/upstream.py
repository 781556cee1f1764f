"""What the kit reads from the mock: a turn's own requests once settled, and the flows' outcomes.

A thin layer over mock_llm's typed client (`mock_llm.client`), in the kit's terms.

Deliberate choices:
- A turn's requests are read by its KEY with the mock's server-side settle wait, so they
  are counted once the turn has gone quiet, never mid-flight. A turn that never settles
  within the turn timeout is a failure of its own, not a count.
- Side calls (titles, tags, follow-ups an app asks the model for around a turn) are not the
  turn's requests: the mock marks them from the profile's rules and the kit leaves them out.
- Expected outcomes come from the flows themselves (their `expect` blocks, as
  conformance/oracle/expected.py reads them), never from a guardrail implementation; the
  kit reads them once per session.
- No verdict on a partial journal: `begin(key)` notes where the journal stands before a
  turn is asked (its `next_seq`), and every read of the turn checks the journal still holds
  everything since (`first_seq` not past it). Another client filling the mock's bounded
  journal, or clearing it, makes the read raise EvidenceLost, which says how to give the mock
  a larger journal. The check is exact, not "did `dropped` grow": a long-lived mock with a
  full journal drops an old entry for every new one, and those old entries are no turn's
  evidence. A KEY never begun is checked from the session's start (the conservative side).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from conformance.oracle.expected import Expected
from mock_llm.client import JournalRead, JournalRecord, MockClient, MockClientError

SETTLE_MS = 300
"""How long a turn's journal must stay unchanged before its requests are counted."""
MAX_WAIT_MS = 60_000
"""The longest settle wait the mock grants."""


class MockUnreachable(RuntimeError):
    """The mock did not answer as mock_llm does."""


class TurnNotSettled(AssertionError):
    """A turn's requests were still changing when the wait ran out."""


class EvidenceLost(AssertionError):
    """The mock's journal no longer holds every request made since a turn began."""


@dataclass(frozen=True)
class Mark:
    """Where the journal stood before a turn: the `seq` its first request can have (None
    from a mock that does not say) and the count of entries dropped so far."""

    next_seq: int | None
    dropped: int

    @classmethod
    def of(cls, read: JournalRead) -> Mark:
        return cls(read.next_seq, read.dropped)

    def lost(self, read: JournalRead) -> bool:
        """Whether `read` no longer holds every entry from this mark on (for a mock that does
        not say what it holds: whether it dropped or cleared anything since)."""
        if self.next_seq is None or read.first_seq is None:
            return read.dropped != self.dropped
        return read.first_seq > self.next_seq

    def problem(self, key: str, read: JournalRead) -> str:
        """What a user reads when `read` lost entries since this mark."""
        dropped = read.dropped - self.dropped
        cause = (
            f"{dropped} entries were dropped since, to stay within its bounds"
            if dropped > 0
            else "it was cleared since"
        )
        return (
            f"evidence lost for KEY {key}: the mock's journal no longer holds every request"
            f" made since the turn began ({cause}; it keeps {read.capacity} entries). Another"
            " client is filling or clearing the mock's journal, so the kit gives no verdict on"
            " what is left. Give the mock a larger journal (python -m mock_llm --journal-size"
            " ENTRIES --journal-bytes BYTES) or a mock of its own for the kit"
        )


class Upstream:
    def __init__(self, mock_url: str, timeout_s: float) -> None:
        self.mock_url = mock_url.rstrip("/")
        self._client = MockClient(self.mock_url, timeout=timeout_s)
        self._wait_ms = min(int(timeout_s * 1000), MAX_WAIT_MS)
        self._marks: dict[str, Mark] = {}
        self._session = Mark(1, 0)  # the journal's start until check() reads where it stands

    def close(self) -> None:
        self._client.close()

    def check(self) -> None:
        """MockUnreachable unless the URL answers as mock_llm with a journal it can read."""
        try:
            self._client.health()
            self._session = Mark.of(self._client.requests("conformance-preflight"))
        except MockClientError as exc:
            raise MockUnreachable(
                f"{self.mock_url} is not a mock_llm this kit reads: {exc}"
            ) from exc
        except Exception as exc:
            raise MockUnreachable(f"the mock at {self.mock_url} does not answer: {exc}") from exc

    def begin(self, key: str) -> None:
        """Note where the journal stands before `key`'s question is sent: its reads then
        check that nothing since was dropped (EvidenceLost)."""
        self._marks[key] = Mark.of(self._client.requests("conformance-clock"))

    def _kept(self, key: str, read: JournalRead) -> JournalRead:
        """`read`, unless the journal lost entries since `key`'s turn began (EvidenceLost)."""
        mark = self._marks.get(key, self._session)
        if mark.lost(read):
            raise EvidenceLost(mark.problem(key, read))
        return read

    def requests(self, key: str, settle_ms: int = SETTLE_MS) -> list[JournalRecord]:
        """The turn's own requests (no side calls) once none changed for `settle_ms`;
        EvidenceLost when the journal no longer holds them all. A look first, so a turn whose
        entries are already gone fails at once, not after the whole settle wait."""
        self._kept(key, self._client.requests(key))
        read = self._client.requests(key, settle_ms=settle_ms, timeout_ms=self._wait_ms)
        self._kept(key, read)
        if read.settled is False:
            raise TurnNotSettled(
                f"the mock's requests for KEY {key} were still changing after"
                f" {self._wait_ms / 1000:g} s"
            )
        return [record for record in read.requests if not record.side_call]

    def now_ms(self) -> float:
        """The mock's clock now (the clock of every `*_ms` field in its journal)."""
        return self._client.requests("conformance-clock").now_ms

    def everything(self, key: str) -> list[JournalRecord]:
        """Every journal entry under `key` as it stands, side calls included (for evidence)."""
        return list(self._client.requests(key).requests)

    @cached_property
    def _outcomes(self) -> dict[str, Expected]:
        return {
            flow.name: Expected(
                flow.expect,
                flow.canary,
                flow.family,
                flow.elsewhere,
                flow.written_by,
                flow.by_family,
            )
            for flow in self._client.flows()
            if flow.expect is not None
        }

    def expected(self, flow: str) -> Expected | None:
        """The outcome `flow` states, None when the mock has no such flow or it states none."""
        return self._outcomes.get(flow)

    def add_flows(self, text: str) -> None:
        """Add a flow file's flows (MockClientError when the mock refuses them). Called
        before any outcome is read: the outcomes are read once."""
        self._client.add_flows(text)

    def add_side_calls(self, patterns: tuple[str, ...]) -> None:
        if patterns:
            self._client.add_side_calls(patterns)
