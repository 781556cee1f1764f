"""The kit's options: each command-line flag, the environment variable behind it, and the
settings they resolve to (`KitConfig`).

A flag wins over its variable. Everything is resolved once, when the first conformance test
is collected (or a fixture asks), so a run that collects no kit test never reads them; a bad
value is a usage error that names the flag or the variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.browser.session import DEFAULT_CHROMIUM, DEFAULT_TURN_TIMEOUT_S
from conformance.oracle.baseline import Baseline, BaselineError, load_baseline
from conformance.oracle.cases import CaseFile, CasesError, load_cases
from conformance.profiles.keys import ProfileError
from conformance.profiles.loader import resolve_profile
from conformance.profiles.model import DEFAULT_PROFILE, Profile

TRACE_MODES = ("dom", "screenshots", "off")
DEFAULT_STOP_WITHIN_MS = 1000.0
"""How long after Stop the mock may see the disconnect (G11): far more than closing a
stream takes, far less than the `slow` flow's answer (about 12 s)."""


@dataclass(frozen=True)
class Option:
    flag: str
    env: str
    help: str
    number: bool = False  # a positive number (float)
    choices: tuple[str, ...] | None = None
    repeatable: bool = False  # the variable then holds paths separated by os.pathsep

    def add(self, group: pytest.OptionGroup) -> None:
        extra: dict[str, Any] = {"type": float} if self.number else {}
        env = f"env {self.env}"
        if self.choices is not None:
            extra["choices"] = self.choices
        if self.repeatable:
            extra.update(action="append", metavar="FILE")
            env += ", paths separated by the OS path separator"
        group.addoption(self.flag, default=None, help=f"{self.help} [{env}]", **extra)


OPTIONS: tuple[Option, ...] = (
    Option("--app-url", "CONFORMANCE_APP_URL", "the chat page to check (with --mock-url)"),
    Option("--mock-url", "CONFORMANCE_MOCK_URL", "the mock_llm the app talks to (with --app-url)"),
    Option("--app-log", "CONFORMANCE_APP_LOG", "the app's log file, for the log clause (G10)"),
    Option(
        "--guard-log",
        "CONFORMANCE_GUARD_LOG",
        "the log (stderr) of the guard proxy (python -m guard) the app's model calls go"
        " through: G10 is then judged on its lines, tied to each turn by request id",
    ),
    Option(
        "--profile",
        "CONFORMANCE_PROFILE",
        "a built-in profile (openwebui) or a TOML file describing the page",
    ),
    Option("--expected-failures", "CONFORMANCE_EXPECTED_FAILURES", "a baseline of known failures"),
    Option(
        "--conformance-report",
        "CONFORMANCE_REPORT",
        "write a clause-by-result table (markdown)",
    ),
    Option(
        "--chromium-path",
        "CONFORMANCE_CHROMIUM",
        f"the browser binary (default {DEFAULT_CHROMIUM})",
    ),
    Option(
        "--conformance-artifacts", "CONFORMANCE_ARTIFACTS", "where failing tests leave evidence"
    ),
    Option(
        "--reference-model",
        "CONFORMANCE_REFERENCE_MODEL",
        "the model name the reference app asks for (without --app-url; default lfm2-1.2b):"
        " its family's flows are judged by G13, the others' by G15",
    ),
    Option(
        "--conformance-trace",
        "CONFORMANCE_TRACE",
        "the Playwright trace a failing test leaves: dom (DOM snapshots, the default),"
        " screenshots (DOM snapshots and a filmstrip, slower) or off",
        choices=TRACE_MODES,
    ),
    Option(
        "--cases",
        "CONFORMANCE_CASES",
        "a flow file of your own cases (a recording with `expect` blocks, .gz or not):"
        " each flow that states an outcome is checked as clause CASE (repeatable)",
        repeatable=True,
    ),
    Option(
        "--turn-timeout",
        "CONFORMANCE_TURN_TIMEOUT",
        f"seconds a turn may take before it fails (default {DEFAULT_TURN_TIMEOUT_S:g})",
        number=True,
    ),
    Option(
        "--stop-within-ms",
        "CONFORMANCE_STOP_WITHIN_MS",
        "milliseconds after Stop within which the mock must see the disconnect (G11;"
        f" default {DEFAULT_STOP_WITHIN_MS:g})",
        number=True,
    ),
)
BY_FLAG = {option.flag: option for option in OPTIONS}


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "the guardrail conformance kit")
    for each in OPTIONS:
        each.add(group)


def option(config: pytest.Config, flag: str) -> str | None:
    """The flag's value as given, else its environment variable's (None when neither)."""
    value = config.getoption(flag)
    if value is None:
        value = os.environ.get(BY_FLAG[flag].env) or None
    return value


def number(config: pytest.Config, flag: str, default: float) -> float:
    """A positive number from the flag or its variable; UsageError names a bad one."""
    value = config.getoption(flag)
    source = flag
    if value is None and (raw := os.environ.get(BY_FLAG[flag].env)):
        source = f"{BY_FLAG[flag].env}={raw!r}"
        try:
            value = float(raw)
        except ValueError:
            raise pytest.UsageError(f"conformance: {source} is not a number") from None
    if value is None:
        return default
    if not value > 0:
        raise pytest.UsageError(f"conformance: {source} must be more than 0")
    return float(value)


@dataclass(frozen=True)
class KitConfig:
    app_url: str | None
    mock_url: str | None
    app_log: Path | None
    profile: Profile
    baseline: Baseline
    report: Path | None
    chromium: str
    artifacts: Path
    turn_timeout_s: float
    trace: str = "dom"
    cases: tuple[CaseFile, ...] = ()
    reference_model: str | None = None
    stop_within_ms: float = DEFAULT_STOP_WITHIN_MS
    guard_log: Path | None = None
    """The guard proxy's log (`--guard-log`), which G10 then reads instead of an app log."""


KIT_KEY = pytest.StashKey[KitConfig]()
_CASES_KEY = pytest.StashKey[tuple[CaseFile, ...]]()


def kit_of(config: pytest.Config) -> KitConfig:
    """The run's settings, resolved on first use and kept in the config's stash."""
    if KIT_KEY not in config.stash:
        config.stash[KIT_KEY] = kit_config(config)
    return config.stash[KIT_KEY]


def kit_config(config: pytest.Config) -> KitConfig:
    """The resolved options; UsageError names what is wrong."""
    app_url, mock_url = option(config, "--app-url"), option(config, "--mock-url")
    if (app_url is None) != (mock_url is None):
        raise pytest.UsageError(
            "conformance: pass both --app-url and --mock-url, or neither (the kit then"
            " starts the mock and the reference app itself)"
        )
    reference_model = option(config, "--reference-model")
    if reference_model is not None and app_url is not None:
        raise pytest.UsageError(
            "conformance: --reference-model names the model of the reference app the kit"
            " starts; with --app-url, your app's own setting names its model"
        )
    profile = DEFAULT_PROFILE
    if (path := option(config, "--profile")) is not None:
        try:
            profile = resolve_profile(path)
        except ProfileError as exc:
            raise pytest.UsageError(f"conformance: {exc}") from exc
    baseline = Baseline()
    if (path := option(config, "--expected-failures")) is not None:
        try:
            baseline = load_baseline(Path(path))
        except BaselineError as exc:
            raise pytest.UsageError(f"conformance: {exc}") from exc
    log = option(config, "--app-log")
    guard_log = option(config, "--guard-log")
    if guard_log is not None and log is not None:
        raise pytest.UsageError(
            "conformance: pass --app-log (the app's own per-turn log) or --guard-log (the"
            " log of the guard proxy in front of it), not both: G10 judges one log"
        )
    if guard_log is not None and app_url is None:
        raise pytest.UsageError(
            "conformance: --guard-log is the log of the guard proxy in front of your app"
            " (--app-url); the reference app the kit starts writes its own per-turn log"
        )
    report = option(config, "--conformance-report")
    trace = option(config, "--conformance-trace") or "dom"
    if trace not in TRACE_MODES:
        raise pytest.UsageError(
            f"conformance: CONFORMANCE_TRACE={trace!r}; use one of {', '.join(TRACE_MODES)}"
        )
    return KitConfig(
        app_url=app_url,
        mock_url=mock_url,
        app_log=Path(log) if log else None,
        profile=profile,
        baseline=baseline,
        report=Path(report) if report else None,
        chromium=option(config, "--chromium-path") or DEFAULT_CHROMIUM,
        artifacts=Path(option(config, "--conformance-artifacts") or "conformance-artifacts"),
        turn_timeout_s=number(config, "--turn-timeout", DEFAULT_TURN_TIMEOUT_S),
        trace=trace,
        cases=kit_cases(config),
        reference_model=reference_model,
        stop_within_ms=number(config, "--stop-within-ms", DEFAULT_STOP_WITHIN_MS),
        guard_log=Path(guard_log) if guard_log else None,
    )


def kit_cases(config: pytest.Config) -> tuple[CaseFile, ...]:
    """The `--cases` files, read once per process; UsageError names a bad one."""
    if _CASES_KEY not in config.stash:
        paths: list[str] = config.getoption("--cases") or []
        if not paths and (env := os.environ.get(BY_FLAG["--cases"].env)):
            paths = [path for path in env.split(os.pathsep) if path]
        try:
            config.stash[_CASES_KEY] = load_cases(Path(path) for path in paths)
        except CasesError as exc:
            raise pytest.UsageError(f"conformance: {exc}") from exc
    return config.stash[_CASES_KEY]
