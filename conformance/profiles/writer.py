"""A starting profile as TOML text, with comments, from what `conformance init` found. Pure.

Deliberate choices:
- Everything init could not find is written as a comment that says so and what to do, never
  as a guess: the preflight then names what is still missing.
- Values are TOML basic strings escaped here (a selector can hold quotes and backslashes),
  and the text is read back with `load_profile` before it is written
  (conformance/init/command.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

DoneKind = Literal["attribute", "appears", "disappears", "quiet"]
DIALOG_WAIT_MS = 2000
"""How long a dialog init clicked may take to show (`within_ms` of its set-up step)."""


@dataclass(frozen=True)
class FoundSetup:
    """A set-up step init had to take before the composer showed."""

    action: Literal["click_if_visible", "select"]
    selector: str
    value: str | None = None  # select: the option chosen
    why: str = ""
    once: bool = False
    """Done once per browser context (`[[setup_once]]`): a dialog that did not show again
    on a fresh load of the page (its dismissal kept by the browser)."""


@dataclass(frozen=True)
class FoundDone:
    """How a finished turn differs from a streaming one, as init saw it."""

    kind: DoneKind
    selector_or_attribute: str | None = None
    streaming_value: str | None = None
    why: str = ""


@dataclass(frozen=True)
class Found:
    """What init found on the page (None: not found, with a note in `notes`)."""

    url: str
    input: str
    send_with: Literal["click", "enter"]
    send: str | None
    message: str
    answer: str
    done: FoundDone
    error: str | None = None
    stop: str | None = None
    thinking: str | None = None
    tools: bool = False
    side_calls: tuple[str, ...] = ()
    setup: tuple[FoundSetup, ...] = ()
    notes: dict[str, str] = field(default_factory=dict[str, str])
    """Per part (`error`, `stop`, `thinking`, `message`, ...): what init saw, for a comment."""


def toml_string(value: str) -> str:
    """`value` as a TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value, ensure_ascii=False)


def render_profile(found: Found, name: str) -> str:
    """The profile file's text."""
    notes = found.notes
    lines = [
        f"# A starting profile for {found.url}, written by `python -m conformance init`.",
        "# Check it with the kit: its preflight names any part that does not match.",
        "#   pytest conformance --app-url URL --mock-url MOCK --profile THIS_FILE",
        f"name = {toml_string(name)}",
        "",
        "[selectors]",
        f"input = {toml_string(found.input)}",
    ]
    if found.send is not None:
        lines.append(f"send = {toml_string(found.send)}")
    lines += [
        f"message = {toml_string(found.message)}  # one per answer",
        f"answer = {toml_string(found.answer)}  # inside a message",
    ]
    lines += _optional("error", found.error, notes, "the error display (G3)")
    lines += _optional("stop", found.stop, notes, "the stop control (G11)")
    lines += _optional("thinking", found.thinking, notes, "the thinking display (G9)")
    lines += ["", "[input]", f"send_with = {toml_string(found.send_with)}"]
    lines += ["", "[done]", *_done(found.done)]
    for step in (*(s for s in found.setup if not s.once), *(s for s in found.setup if s.once)):
        table = "[[setup_once]]" if step.once else "[[setup]]"
        lines += ["", f"{table}  # {step.why}" if step.why else table]
        lines.append(f"{step.action} = {toml_string(step.selector)}")
        if step.action == "click_if_visible":
            lines.append(f"within_ms = {DIALOG_WAIT_MS}")
        elif step.value is not None:
            lines.append(f"option = {toml_string(step.value)}")
    lines += ["", "[capabilities]"]
    lines.append(f"thinking = {_flag(found.thinking is not None)}")
    lines.append(f"stop = {_flag(found.stop is not None)}")
    lines.append("log = false  # true once [log] names the app's per-turn line (G10)")
    tools_note = "its requests offer tools" if found.tools else "its requests offered no tools"
    lines.append(f"tools = {_flag(found.tools)}  # {tools_note}")
    if found.side_calls:
        lines += ["", "[model_calls]", "# Extra model calls seen around a turn: check each."]
        lines.append("side_calls = [" + ", ".join(toml_string(s) for s in found.side_calls) + "]")
    lines += [
        "",
        "# [log]  # the app's per-turn log line, for G10 (see docs/conformance.md)",
        '# turn_id_header = "X-Turn-Id"',
        "# line = 'turn={turn_id} .* scaffold_stripped=(\\d+)$'",
    ]
    return "\n".join(lines) + "\n"


def _optional(key: str, value: str | None, notes: dict[str, str], what: str) -> list[str]:
    note = notes.get(key, "")
    if value is not None:
        return [f"{key} = {toml_string(value)}" + (f"  # {note}" if note else "")]
    return [f'# {key} = "..."  # {what}: not found ({note or "init saw none"})']


def _done(done: FoundDone) -> list[str]:
    why = f"# {done.why}" if done.why else "# how init told a finished turn from a streaming one"
    if done.kind == "attribute" and done.selector_or_attribute is not None:
        return [
            why,
            f"attribute = {toml_string(done.selector_or_attribute)}",
            f"streaming_value = {toml_string(done.streaming_value or 'streaming')}",
        ]
    rule = ['attribute = ""']
    if done.kind in ("appears", "disappears") and done.selector_or_attribute is not None:
        rule.append(f"{done.kind} = {toml_string(done.selector_or_attribute)}")
    return [why, *rule]


def _flag(value: bool) -> str:
    return "true" if value else "false"
