"""What init concludes from what it saw, pure: the done rule, the side-call rules, and the
profile it drives the page with before it has written one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from conformance.profiles.model import DoneRule, Profile, Selectors, SetupStep
from conformance.profiles.writer import DIALOG_WAIT_MS, Found, FoundDone
from guardrail.json_shapes import is_array, is_object, objects


def done_rule(finished: dict[str, Any], during: dict[str, Any], stop: str | None) -> FoundDone:
    """How a finished message differs from a streaming one. Pure."""
    done_attrs: dict[str, str] = finished["attributes"]
    live_attrs: dict[str, str] = during["attributes"]
    for name in sorted(done_attrs, key=lambda n: (not n.startswith(("data-", "aria-")), n)):
        if name in ("class", "style", "id") or done_attrs[name] == live_attrs.get(name):
            continue
        live = live_attrs.get(name)
        why = f"{name} is {live!r} while it streams, {done_attrs[name]!r} once done"
        return FoundDone("attribute", name, live or "streaming", why)
    new = [b for b in finished["buttons"] if b not in during["buttons"]]
    if new:
        return FoundDone("appears", new[0], why=f"{new[0]} shows in a message once it is done")
    if stop is not None:
        return FoundDone("disappears", stop, why="the stop control goes away once it is done")
    return FoundDone("quiet", why="nothing told done from streaming: the page going quiet does")


def provisional(found: Found) -> Profile:
    """A profile of what init found so far, to drive the page with the kit's own ChatPage."""
    selectors = Selectors(input=found.input, send=found.send or "button", message=found.message,
                          answer=found.answer, error="[data-sg-init-none]", stop=found.stop,
                          thinking=None)  # fmt: skip
    done = found.done
    rule = DoneRule(
        attribute=done.selector_or_attribute if done.kind == "attribute" else None,
        streaming_value=done.streaming_value or "streaming",
        appears=done.selector_or_attribute if done.kind == "appears" else None,
        disappears=done.selector_or_attribute if done.kind == "disappears" else None,
    )
    setup = tuple(SetupStep(s.action, s.selector, s.value, DIALOG_WAIT_MS if s.value is None else 0)
                  for s in found.setup if not s.once)  # fmt: skip
    return Profile(name="init", selectors=selectors, send_with=found.send_with, done=rule,
                   setup=setup)  # fmt: skip


SIDE_CALL_PREFIX_CHARS = 40
REGEX_SPECIAL = re.compile(r"[.^$*+?{}\[\]\\|()]")


def side_call_rules(bodies: Sequence[object]) -> tuple[str, ...]:
    """Rules for the requests after a one-request turn's first: each one's system message,
    else its last user message, by the start of its first line. Pure."""
    rules: list[str] = []
    for body in bodies[1:]:
        messages = body.get("messages") if is_object(body) else None
        if not is_array(messages):
            continue
        texts = [(m.get("role"), m.get("content")) for m in objects(messages)]
        system = [c for r, c in texts if r == "system" and isinstance(c, str) and c.strip()]
        users = [c for r, c in texts if r == "user" and isinstance(c, str) and c.strip()]
        text = system[0] if system else users[-1] if users else ""
        start = text.strip().splitlines()[0][:SIDE_CALL_PREFIX_CHARS] if text.strip() else ""
        rule = "^" + REGEX_SPECIAL.sub(r"\\\g<0>", start)
        if start and rule not in rules:
            rules.append(rule)
    return tuple(rules)
