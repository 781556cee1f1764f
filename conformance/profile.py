"""A target's profile: how to drive its chat page, and what it can do (TOML, or the default).

The kit never changes the app it checks; the profile describes the page instead. The
default profile is the reference app's page (its `data-testid` hooks); a profile file for
another app overrides what differs. The keys, with an example: docs/conformance.md.

Deliberate choices:
- Every key is validated at load: an unknown key, a wrong type or a missing required
  selector stops the run with the file and the key, not a confusing timeout later.
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
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal, cast

from conformance.clauses import Capability

SendWith = Literal["click", "enter"]
TurnFind = Literal["after-question", "last", "count"]
TURN_FINDS: tuple[TurnFind, ...] = ("after-question", "last", "count")
"""How the kit finds a turn's assistant message (`[turn] find`), the default first."""
SetupAction = Literal["click", "click_if_visible", "fill", "select", "wait_for"]
_SETUP_VALUES: dict[str, str | None] = {
    "click": None,
    "click_if_visible": None,
    "fill": "text",
    "select": "option",
    "wait_for": None,
}
MAX_SIDE_CALL_RULES = 32
CAPABILITIES: tuple[Capability, ...] = ("thinking", "stop", "log", "tools")


class ProfileError(ValueError):
    """A profile file is unreadable or invalid; the message names the file and the key."""


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

_SECTIONS = {"name", "selectors", "input", "done", "setup", "setup_once", "session",
             "capabilities", "log", "model_calls", "turn", "error_text"}  # fmt: skip


BUILT_IN = resources.files("conformance").joinpath("profiles")
"""The profiles shipped with the kit, one TOML file each (`--profile openwebui`)."""


def built_in_profiles() -> list[str]:
    """The names `--profile` takes besides a file's path."""
    return sorted(
        entry.name.removesuffix(".toml")
        for entry in BUILT_IN.iterdir()
        if entry.name.endswith(".toml")
    )


def resolve_profile(value: str) -> Profile:
    """`--profile`'s value: a built-in profile's name, else a TOML file's path."""
    if value in built_in_profiles() and not Path(value).exists():
        with resources.as_file(BUILT_IN.joinpath(f"{value}.toml")) as path:
            return replace(load_profile(path), source=f"built-in ({value})")
    return load_profile(Path(value))


def load_profile(path: Path) -> Profile:
    """The profile in a TOML file, on top of the default; ProfileError names what is wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        builtin = ", ".join(built_in_profiles())
        raise ProfileError(
            f"{path}: cannot read the profile: {exc.strerror} (built-in profiles: {builtin})"
        ) from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: not valid TOML: {exc}") from exc
    return _build(data, path)


def _build(data: Mapping[str, Any], path: Path) -> Profile:
    where = _Where(path)
    where.known(data, _SECTIONS, "")
    selectors = _section(data, "selectors", where)
    where.known(selectors, set(Selectors.__dataclass_fields__), "selectors.")
    done = _section(data, "done", where)
    where.known(done, set(DoneRule.__dataclass_fields__), "done.")
    log = _section(data, "log", where)
    where.known(log, set(LogSpec.__dataclass_fields__), "log.")
    sending = _section(data, "input", where)
    where.known(sending, {"send_with"}, "input.")
    turn = _section(data, "turn", where)
    where.known(turn, {"find"}, "turn.")
    session = _section(data, "session", where)
    where.known(session, {"storage_state"}, "session.")
    calls = _section(data, "model_calls", where)
    where.known(calls, {"side_calls"}, "model_calls.")
    declared = _section(data, "capabilities", where)
    where.known(declared, set(CAPABILITIES), "capabilities.")
    error_text = where.error_text(_section(data, "error_text", where))

    base = DEFAULT_PROFILE
    sel = replace(
        base.selectors, **{k: where.text(v, f"selectors.{k}") for k, v in selectors.items()}
    )
    send_with = where.choice(
        sending.get("send_with", "click"), ("click", "enter"), "input.send_with"
    )
    find = where.choice(turn.get("find", base.turn_find), TURN_FINDS, "turn.find")
    rule = DoneRule(
        attribute=where.optional_text(done.get("attribute", base.done.attribute), "done.attribute"),
        streaming_value=where.text(
            done.get("streaming_value", "streaming"), "done.streaming_value"
        ),
        appears=where.optional_text(done.get("appears"), "done.appears"),
        disappears=where.optional_text(done.get("disappears"), "done.disappears"),
        quiet_ms=where.count(done.get("quiet_ms", base.done.quiet_ms), "done.quiet_ms"),
    )
    steps = tuple(
        where.setup_step(step, f"setup[{i}]") for i, step in enumerate(where.tables(data, "setup"))
    )
    once = tuple(
        where.once_step(step, f"setup_once[{i}]")
        for i, step in enumerate(where.tables(data, "setup_once"))
    )
    state = session.get("storage_state")
    storage = None
    if state is not None:
        storage = (path.parent / where.text(state, "session.storage_state")).resolve()
        if not storage.is_file():
            raise ProfileError(f"{path}: session.storage_state {storage} is not a file")
    capabilities: frozenset[Capability] = frozenset(
        cap for cap in CAPABILITIES if where.flag(declared.get(cap, False), f"capabilities.{cap}")
    )
    line = where.regex(log.get("line", base.log.line), "log.line", "{turn_id}")
    frame = log.get("turn_id_frame")
    if frame is not None:
        frame = where.regex(frame, "log.turn_id_frame", None)
        if re.compile(frame).groups < 1:
            raise ProfileError(f"{path}: log.turn_id_frame needs a group (...) for the turn id")
    side_calls = calls.get("side_calls", [])
    if not isinstance(side_calls, list) or len(cast(list[Any], side_calls)) > MAX_SIDE_CALL_RULES:
        raise ProfileError(
            f"{path}: model_calls.side_calls must be a list of at most {MAX_SIDE_CALL_RULES}"
            " regular expressions"
        )
    rules = tuple(
        where.text(rule, f"model_calls.side_calls[{i}]")
        for i, rule in enumerate(cast(list[Any], side_calls))
    )
    return Profile(
        name=where.text(data.get("name", path.stem), "name"),
        selectors=sel,
        send_with=cast(SendWith, send_with),
        done=rule,
        turn_find=cast(TurnFind, find),
        setup=steps,
        setup_once=once,
        storage_state=storage,
        capabilities=capabilities,
        log=LogSpec(
            turn_id_header=where.optional_text(
                log.get("turn_id_header", base.log.turn_id_header), "log.turn_id_header"
            ),
            turn_id_frame=frame,
            line=line,
        ),
        side_calls=rules,
        error_text=error_text,
        source=str(path),
    )


def _section(data: Mapping[str, Any], name: str, where: _Where) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ProfileError(f"{where.path}: [{name}] must be a table")
    return cast(dict[str, Any], value)


@dataclass(frozen=True)
class _Where:
    path: Path

    def known(self, table: Mapping[str, Any], allowed: set[str], prefix: str) -> None:
        unknown = sorted(set(table) - allowed)
        if unknown:
            known = ", ".join(sorted(allowed))
            raise ProfileError(f"{self.path}: unknown key {prefix}{unknown[0]} (known: {known})")

    def text(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ProfileError(f"{self.path}: {key} must be a non-empty string")
        return value

    def optional_text(self, value: Any, key: str) -> str | None:
        return None if value is None or value == "" else self.text(value, key)

    def choice(self, value: Any, options: tuple[str, ...], key: str) -> str:
        if value not in options:
            raise ProfileError(f"{self.path}: {key} must be one of {', '.join(options)}")
        return cast(str, value)

    def count(self, value: Any, key: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 60_000:
            raise ProfileError(f"{self.path}: {key} must be a whole number of ms, 1 to 60000")
        return value

    def tables(self, data: Mapping[str, Any], name: str) -> list[Any]:
        value = data.get(name, [])
        if not isinstance(value, list):
            raise ProfileError(f"{self.path}: {name} must be a list of [[{name}]] tables")
        return cast(list[Any], value)

    def setup_step(self, step: Any, key: str, also: str = "") -> SetupStep:
        shapes = "click, click_if_visible, wait_for = SELECTOR; fill = SELECTOR with text = ...;"
        shapes += f"{also} select = SELECTOR with option = ..."
        if not isinstance(step, dict):
            raise ProfileError(f"{self.path}: {key} must be a table ({shapes})")
        table = cast(dict[str, Any], step)
        actions = [name for name in _SETUP_VALUES if name in table]
        if len(actions) != 1:
            raise ProfileError(f"{self.path}: {key} must name exactly one action ({shapes})")
        action = actions[0]
        value_key = _SETUP_VALUES[action]
        allowed = {action}
        if value_key is not None:
            allowed.add(value_key)
        if action == "click_if_visible":
            allowed.add("within_ms")
        self.known(table, allowed, f"{key}.")
        selector = self.text(table[action], f"{key}.{action}")
        if value_key is None:
            within = table.get("within_ms")
            within_ms = 0 if within is None else self.count(within, f"{key}.within_ms")
            return SetupStep(cast(SetupAction, action), selector, within_ms=within_ms)
        if value_key not in table or not isinstance(table[value_key], str):
            raise ProfileError(f"{self.path}: {key}.{value_key} must be a string")
        return SetupStep(cast(SetupAction, action), selector, cast(str, table[value_key]))

    def once_step(self, step: Any, key: str) -> SetupStep | HttpStep:
        if isinstance(step, dict) and "http" in step:
            return self.http_step(cast(dict[str, Any], step), key)
        return self.setup_step(step, key, also=' http = "METHOD URL" with headers, json or body;')

    def http_step(self, step: dict[str, Any], key: str) -> HttpStep:
        self.known(step, {"http", "headers", "json", "body"}, f"{key}.")
        method, _, url = self.text(step["http"], f"{key}.http").strip().partition(" ")
        url = url.strip()
        if method.upper() not in HTTP_METHODS or not url or " " in url:
            raise ProfileError(
                f"{self.path}: {key}.http must be METHOD URL, such as"
                f' "POST /api/settings" (methods: {", ".join(HTTP_METHODS)})'
            )
        headers = step.get("headers", {})
        if not isinstance(headers, dict) or not all(
            isinstance(v, str) for v in cast(dict[str, Any], headers).values()
        ):
            raise ProfileError(f"{self.path}: {key}.headers must be a table of strings")
        if "json" in step and "body" in step:
            raise ProfileError(f"{self.path}: {key} takes json or body, not both")
        body = step.get("body")
        if body is not None and not isinstance(body, str):
            raise ProfileError(f"{self.path}: {key}.body must be a string (or use json = ...)")
        return HttpStep(
            cast(HttpMethod, method.upper()),
            url,
            tuple(cast(dict[str, str], headers).items()),
            step.get("json"),
            body,
        )

    def regex(self, value: Any, key: str, placeholder: str | None) -> str:
        text = self.text(value, key)
        try:
            re.compile(text.replace(placeholder, "x") if placeholder else text)
        except re.error as exc:
            raise ProfileError(f"{self.path}: {key} is not a valid regex: {exc}") from exc
        return text

    def error_text(self, table: dict[str, Any]) -> ErrorText:
        self.known(table, {"match", "pattern"}, "error_text.")
        match = cast(
            ErrorMatch,
            self.choice(table.get("match", "exact"), ERROR_MATCHES, "error_text.match"),
        )
        pattern = table.get("pattern")
        if match != "regex":
            if pattern is not None:
                raise ProfileError(
                    f'{self.path}: error_text.pattern is read only with match = "regex"'
                )
            return ErrorText(match)
        if pattern is None:
            raise ProfileError(
                f'{self.path}: error_text.pattern is needed with match = "regex" (a regex'
                f" around {ERROR_PLACEHOLDER}, the contract's error copy)"
            )
        text = self.regex(pattern, "error_text.pattern", ERROR_PLACEHOLDER)
        if ERROR_PLACEHOLDER not in text:
            raise ProfileError(
                f"{self.path}: error_text.pattern must contain {ERROR_PLACEHOLDER}, where the"
                " contract's error copy goes"
            )
        return ErrorText(match, text)

    def flag(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise ProfileError(f"{self.path}: {key} must be true or false")
        return value
