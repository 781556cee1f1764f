"""A target's profile as data: how to drive its chat page, and what it can do.

The default profile is the reference app's page (its `data-testid` hooks); a profile file
(conformance/profiles/loader.py) overrides what differs for another app. The keys, with an
example: docs/conformance.md.

Deliberate choices:
- Capabilities are declared, never guessed: an undeclared optional clause skips with the
  reason, and a core clause never skips.
- Which message is a turn's (`[turn] find`) defaults to the rule that needs no selector
  of its own (the first message after the question's KEY); `selectors.user_message` is
  optional, for a page that shows the question in more than one place.
- The error copy is compared exactly unless `[error_text]` says otherwise: a framework's
  own error display may put its exception's class name before the copy, which no selector
  can cut. `contains` finds the copy anywhere in the text; `regex` is a pattern around
  `{error}`, the contract's copy (escaped), so the copy stays the kit's and only its
  surroundings are the profile's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

SendWith = Literal["click", "enter"]
SEND_WITHS: tuple[SendWith, ...] = ("click", "enter")
TurnFind = Literal["after-question", "last", "count"]
TURN_FINDS: tuple[TurnFind, ...] = ("after-question", "last", "count")
"""How the kit finds a turn's assistant message (`[turn] find`), the default first."""
SetupAction = Literal["click", "click_if_visible", "fill", "select", "wait_for"]
Capability = Literal["thinking", "stop", "log", "tools"]
"""An optional part of a target a profile declares (a clause that needs one runs only
where it is declared)."""
CAPABILITIES: tuple[Capability, ...] = ("thinking", "stop", "log", "tools")


@dataclass(frozen=True)
class Selectors:
    input: str = "[data-testid=chat-input]"
    send: str = "[data-testid=chat-send]"  # not used with send_with = "enter"
    message: str = "[data-testid=message-assistant]"
    answer: str = "[data-testid=answer]"
    error: str = "[data-testid=chat-error]"
    stop: str | None = "[data-testid=chat-stop]"
    thinking: str | None = "[data-testid=thinking]"
    user_message: str | None = None  # where the page shows the user's question, if needed


@dataclass(frozen=True)
class DoneRule:
    attribute: str | None = "data-state"
    streaming_value: str = "streaming"
    appears: str | None = None
    disappears: str | None = None
    quiet_ms: int = 1500


@dataclass(frozen=True)
class LogSpec:
    turn_id_header: str | None = "X-Turn-Id"
    turn_id_frame: str | None = None  # a regex over WebSocket frames; group 1 is the turn id
    line: str = r"turn={turn_id} .* scaffold_stripped=(\d+)$"

    def frame_pattern(self) -> re.Pattern[str] | None:
        return None if self.turn_id_frame is None else re.compile(self.turn_id_frame)

    def pattern(self, turn_id: str | None) -> re.Pattern[str]:
        """The line regex for one turn (any turn id when the app names none)."""
        ident = re.escape(turn_id) if turn_id is not None else r"\S+"
        return re.compile(self.line.replace("{turn_id}", ident))


ErrorMatch = Literal["exact", "contains", "regex"]
ERROR_MATCHES: tuple[ErrorMatch, ...] = ("exact", "contains", "regex")
ERROR_PLACEHOLDER = "{error}"


@dataclass(frozen=True)
class ErrorText:
    """How the page's error text is compared with the contract's copy (`[error_text]`)."""

    match: ErrorMatch = "exact"
    pattern: str | None = None  # with match = "regex": a regex around {error}, the copy

    def matches(self, shown: str, copy: str) -> bool:
        """Whether `shown` (the page's error text, stripped) shows the contract's `copy`."""
        if self.match == "exact":
            return shown == copy
        if self.match == "contains":
            return copy in shown
        assert self.pattern is not None
        return (
            re.search(self.pattern.replace(ERROR_PLACEHOLDER, re.escape(copy)), shown) is not None
        )

    def describe(self, copy: str) -> str:
        """What `matches` wants, for a failure message."""
        if self.match == "exact":
            return f"exactly {copy!r}"
        if self.match == "contains":
            return f"text containing {copy!r}"
        return f"text matching {self.pattern!r} ({ERROR_PLACEHOLDER} = {copy!r})"


@dataclass(frozen=True)
class SetupStep:
    """One set-up action before a test's first turn: `action` on `selector` (with `value`)."""

    action: SetupAction
    selector: str
    value: str | None = None
    within_ms: int = 0  # click_if_visible: how long it may take to show (0: look once)


HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
HTTP_METHODS: tuple[HttpMethod, ...] = ("GET", "POST", "PUT", "PATCH", "DELETE")


@dataclass(frozen=True)
class HttpStep:
    """One HTTP request of a once-per-run set-up, sent with the browser context's cookies:
    `METHOD` to `url` (a path is the app's), with `headers` and a JSON body (`json`) or a
    text one (`body`). Header values may name `{local_storage:KEY}` or `{cookie:NAME}`,
    read from the page first. Any status outside 200-299 stops the run."""

    method: HttpMethod
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    json: Any = None
    body: str | None = None


@dataclass(frozen=True)
class Profile:
    name: str = "reference"
    selectors: Selectors = field(default_factory=Selectors)
    send_with: SendWith = "click"
    done: DoneRule = field(default_factory=DoneRule)
    turn_find: TurnFind = "after-question"
    setup: tuple[SetupStep, ...] = ()
    setup_once: tuple[SetupStep | HttpStep, ...] = ()
    storage_state: Path | None = None
    capabilities: frozenset[Capability] = frozenset(CAPABILITIES)
    log: LogSpec = field(default_factory=LogSpec)
    side_calls: tuple[str, ...] = ()
    error_text: ErrorText = field(default_factory=ErrorText)
    source: str = "built-in (the reference app's page)"

    def has(self, capability: Capability) -> bool:
        return capability in self.capabilities


DEFAULT_PROFILE = Profile()
