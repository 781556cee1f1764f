"""Reading one profile file's values, each wrong one a ProfileError naming the file and the key.

The loader (conformance/profiles/loader.py) reads a profile's tables through `Keys`: every
key is validated at load, so an unknown key, a wrong type or a missing required selector
stops the run with the file and the key, not a confusing timeout later.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from conformance.profiles.model import (
    ERROR_MATCHES,
    ERROR_PLACEHOLDER,
    HTTP_METHODS,
    ErrorMatch,
    ErrorText,
    HttpMethod,
    HttpStep,
    SetupAction,
    SetupStep,
)
from guardrail.json_shapes import JSONObject, is_array, is_object

Choice = TypeVar("Choice", bound=str)

SETUP_VALUES: dict[SetupAction, str | None] = {
    "click": None,
    "click_if_visible": None,
    "fill": "text",
    "select": "option",
    "wait_for": None,
}
"""Each set-up action, and the key its value goes in (None: it takes none)."""


class ProfileError(ValueError):
    """A profile file is unreadable or invalid; the message names the file and the key."""


@dataclass(frozen=True)
class Keys:
    """The readers of one profile file's values: each returns the value, typed, or raises
    ProfileError naming `path` and the key."""

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

    def choice(self, value: object, options: tuple[Choice, ...], key: str) -> Choice:
        """The one of `options` that `value` is (so typed as the options are)."""
        for option in options:
            if value == option:
                return option
        raise ProfileError(f"{self.path}: {key} must be one of {', '.join(options)}")

    def count(self, value: Any, key: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 60_000:
            raise ProfileError(f"{self.path}: {key} must be a whole number of ms, 1 to 60000")
        return value

    def tables(self, data: Mapping[str, Any], name: str) -> list[object]:
        value = data.get(name, [])
        if not is_array(value):
            raise ProfileError(f"{self.path}: {name} must be a list of [[{name}]] tables")
        return value

    def setup_step(self, step: object, key: str, also: str = "") -> SetupStep:
        shapes = "click, click_if_visible, wait_for = SELECTOR; fill = SELECTOR with text = ...;"
        shapes += f"{also} select = SELECTOR with option = ..."
        if not is_object(step):
            raise ProfileError(f"{self.path}: {key} must be a table ({shapes})")
        table = step
        actions: list[SetupAction] = [name for name in SETUP_VALUES if name in table]
        if len(actions) != 1:
            raise ProfileError(f"{self.path}: {key} must name exactly one action ({shapes})")
        action = actions[0]
        value_key = SETUP_VALUES[action]
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
            return SetupStep(action, selector, within_ms=within_ms)
        value = table.get(value_key)
        if not isinstance(value, str):
            raise ProfileError(f"{self.path}: {key}.{value_key} must be a string")
        return SetupStep(action, selector, value)

    def once_step(self, step: object, key: str) -> SetupStep | HttpStep:
        if is_object(step) and "http" in step:
            return self.http_step(step, key)
        return self.setup_step(step, key, also=' http = "METHOD URL" with headers, json or body;')

    def http_step(self, step: JSONObject, key: str) -> HttpStep:
        self.known(step, {"http", "headers", "json", "body"}, f"{key}.")
        verb, _, url = self.text(step["http"], f"{key}.http").strip().partition(" ")
        url = url.strip()
        method: HttpMethod | None = next((m for m in HTTP_METHODS if m == verb.upper()), None)
        if method is None or not url or " " in url:
            raise ProfileError(
                f"{self.path}: {key}.http must be METHOD URL, such as"
                f' "POST /api/settings" (methods: {", ".join(HTTP_METHODS)})'
            )
        headers = step.get("headers", {})
        texts = (
            {k: v for k, v in headers.items() if isinstance(v, str)} if is_object(headers) else {}
        )
        if not is_object(headers) or len(texts) != len(headers):
            raise ProfileError(f"{self.path}: {key}.headers must be a table of strings")
        if "json" in step and "body" in step:
            raise ProfileError(f"{self.path}: {key} takes json or body, not both")
        body = step.get("body")
        if body is not None and not isinstance(body, str):
            raise ProfileError(f"{self.path}: {key}.body must be a string (or use json = ...)")
        return HttpStep(method, url, tuple(texts.items()), step.get("json"), body)

    def regex(self, value: Any, key: str, placeholder: str | None) -> str:
        text = self.text(value, key)
        try:
            re.compile(text.replace(placeholder, "x") if placeholder else text)
        except re.error as exc:
            raise ProfileError(f"{self.path}: {key} is not a valid regex: {exc}") from exc
        return text

    def error_text(self, table: dict[str, Any]) -> ErrorText:
        self.known(table, {"match", "pattern"}, "error_text.")
        match: ErrorMatch = self.choice(
            table.get("match", "exact"), ERROR_MATCHES, "error_text.match"
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


def section(data: Mapping[str, Any], name: str, where: Keys) -> JSONObject:
    value = data.get(name, {})
    if not is_object(value):
        raise ProfileError(f"{where.path}: [{name}] must be a table")
    return value
