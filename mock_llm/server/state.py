"""The mock server's settings (fixed at start) and its state (what run time changes: the
catalog, the side-call rules, the journal, the turns), which the routes find on the app."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from starlette.requests import Request

from mock_llm.flows.catalog import DEFAULT_MAX_RUNTIME_FLOWS
from mock_llm.flows.model import Dialect, Flow, ReasoningField
from mock_llm.journal.settle import ChangeSignal
from mock_llm.journal.store import DEFAULT_CAPACITY, DEFAULT_MAX_HELD_BYTES, Journal
from mock_llm.play.side_calls import SideCallRules
from mock_llm.play.turns import DEFAULT_QUIET_RESET_S, TurnTracker
from servekit.allowed_hosts import HostPolicy
from servekit.limits import DEFAULT_MAX_BODY_BYTES, LOCAL_ONLY

DEFAULT_MAX_FLOWS_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class MockSettings:
    flows: Mapping[str, Flow]
    reasoning_field: ReasoningField = "reasoning_content"
    dialect: Dialect = "openai"
    """How chat completions are framed where a step does not say (`--dialect`)."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    journal_capacity: int = DEFAULT_CAPACITY
    journal_max_body_bytes: int = DEFAULT_MAX_HELD_BYTES
    quiet_reset_s: float = DEFAULT_QUIET_RESET_S
    max_runtime_flows: int = DEFAULT_MAX_RUNTIME_FLOWS
    max_flows_body_bytes: int = DEFAULT_MAX_FLOWS_BODY_BYTES
    """The largest `POST /_mock/flows` body, and the most text its flows may hold."""
    side_calls: tuple[str, ...] = ()
    """Side-call rules in force from the start (regular expressions, see side_calls.py)."""
    body_timeout_s: float = 10.0
    """How long a request's body may take to arrive whole (else 408): a body shorter than
    its Content-Length was held for over 90 s, waiting for bytes that never came."""
    replay_pacing: float = 1.0
    """What recorded steps' gaps are multiplied by (`--replay-pacing`): 1 plays them as
    recorded, 0 with no pauses. Authored flows keep their `delay_ms` and `ttft_ms`."""
    hosts: HostPolicy = LOCAL_ONLY
    """The Host names the mock answers to (`--allowed-hosts`, servekit.allowed_hosts)."""


@dataclass
class MockState:
    settings: MockSettings
    flows: dict[str, Flow] = field(init=False)
    journal: Journal = field(init=False)
    journal_changed: ChangeSignal = field(init=False)
    turns: TurnTracker = field(init=False)
    side_calls: SideCallRules = field(init=False)

    def __post_init__(self) -> None:
        self.flows = dict(self.settings.flows)
        self.side_calls = SideCallRules.of(self.settings.side_calls)
        self.journal = Journal(self.settings.journal_capacity, self.settings.journal_max_body_bytes)
        self.journal_changed = ChangeSignal()
        self.journal.on_change = self.journal_changed.pulse
        self.turns = TurnTracker(self.settings.quiet_reset_s)


def mock_state(request: Request) -> MockState:
    """The state of the app serving `request` (`create_app` puts it on `app.state.mock`)."""
    state: MockState = request.app.state.mock
    return state
