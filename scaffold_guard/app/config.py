"""The app's settings: one documented list of environment variables, validated at start.

Every setting has a default that gives the embedded demo (`python -m app` with nothing
set: the mock LLM in-process, the bundled sample notes, a local data folder). Real use sets
the LLM variables and the notes folder; nothing else changes. Invalid values stop the start
with one message that lists every problem, rather than failing later mid-turn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from guardrail.model_profiles import AUTO, ProfileChoice, parse_profiles
from guardrail.patterns import Registry
from scaffold_guard.app.rag.llm.chunks import MAX_REPLY_CHARS
from scaffold_guard.app.rag.llm.transport import MAX_REPLY_BYTES
from servekit.allowed_hosts import HostPolicy, parse_allowed_hosts
from servekit.pool import POOL_IDLE_S
from servekit.same_origin import parse_origins

BUNDLED_NOTES = Path(__file__).parent / "sample_notes"
T = TypeVar("T")


class SettingsError(ValueError):
    """One or more environment variables are invalid; the message lists them all."""


@dataclass(frozen=True)
class Setting:
    env: str
    default: str
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting("SG_LLM_BASE_URL", "", "OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1; "
            "empty = start the mock LLM in-process (the embedded demo)"),
    Setting("SG_LLM_MODEL", "lfm2-1.2b", "model name sent upstream"),
    Setting("SG_LLM_API_KEY", "not-needed", "API key sent upstream"),
    Setting("SG_LLM_TIMEOUT_S", "60", "overall time budget of one model request, its retries "
            "and their waits included, seconds"),
    Setting("SG_LLM_MAX_ATTEMPTS", "3", "attempts per request before giving up (1 = no retry)"),
    Setting("SG_LLM_RETRY_DELAY_S", "0.5", "first backoff delay; doubles per retry, up to 8 s"),
    Setting("SG_LLM_RETRY_AFTER_CAP_S", "10", "longest Retry-After honoured; longer = give up"),
    Setting("SG_LLM_POOL_IDLE_S", f"{POOL_IDLE_S:g}", "how long an idle connection to the "
            "model server is kept for reuse, seconds; keep it under the server's own "
            "keep-alive (uvicorn's 5 s)"),
    Setting("SG_TURN_TIMEOUT_S", "180", "overall time budget of one chat turn (every model "
            "request, tool and recovery in it), seconds; past it the turn ends with an error"),
    Setting("SG_SSE_KEEPALIVE_S", "15", "silence after which the chat stream sends a keep-alive "
            "comment, so proxies and browsers keep a long turn open, seconds"),
    Setting("SG_AGENT_MAX_ROUNDS", "4", "tool rounds per turn before a final answer is forced"),
    Setting("SG_AGENT_TOOLS", "on", "on/off: the kill switch for the document tools"),
    Setting("SG_NOTES_DIR", "", "folder of markdown notes; empty = the bundled sample notes"),
    Setting("SG_DATA_DIR", "data", "folder for the SQLite database (created if missing)"),
    Setting("SG_LOG_FILE", "", "file for the per-turn log lines; empty = <data dir>/chat.log"),
    Setting("SG_GROUNDING_THRESHOLD", "", "best-hit score a turn needs to be grounded; "
            "empty = the retrieval module's default"),
    Setting("SG_ALLOWED_HOSTS", "", "host names the app answers to besides localhost and IP "
            "addresses (comma-separated; .lan = a domain and its names; * = any): the DNS "
            "rebinding defence, docs/reliability.md"),
    Setting("SG_ALLOWED_ORIGINS", "", "other sites' pages that may call the API "
            "(comma-separated scheme://host[:port]); they also get CORS headers"),
    Setting("SG_SCAFFOLD_PROFILES", "auto", "scaffolding stripped besides LFM2's markup: auto "
            "(by SG_LLM_MODEL's name, docs/contract.md), none, all, or comma-separated "
            "profiles, e.g. hermes,mistral"),
)  # fmt: skip


@dataclass(frozen=True)
class Settings:
    llm_base_url: str | None
    llm_model: str
    llm_api_key: str
    llm_timeout_s: float
    llm_max_attempts: int
    llm_retry_delay_s: float
    llm_retry_after_cap_s: float
    agent_max_rounds: int
    agent_tools: bool
    notes_dir: Path
    data_dir: Path
    log_file: Path
    grounding_threshold: float | None
    scaffold_profiles: ProfileChoice = AUTO
    turn_timeout_s: float = 180.0
    sse_keepalive_s: float = 15.0
    llm_pool_idle_s: float = POOL_IDLE_S
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: frozenset[str] = frozenset()
    bound_host: str | None = None
    """The address the app listens on (not an env setting: `--host`); a name is answered."""
    llm_max_reply_bytes: int = MAX_REPLY_BYTES
    """The most of one model reply's body read (not an env setting: a bound against a hostile
    model server, made small by tests; docs/reliability.md)."""
    llm_max_reply_chars: int = MAX_REPLY_CHARS
    """The most text one model reply may carry (not an env setting, as above)."""
    embedded_mock_url: str | None = None
    """The in-process mock's base URL when `python -m app` started one (not an env setting):
    the page then shows the demo banner, its failure examples and links to the journal."""

    @property
    def scaffold_registry(self) -> Registry:
        """What the guardrail strips: LFM2's markup plus the profiles chosen (under auto, by
        the model's name)."""
        return self.scaffold_profiles.registry(self.llm_model)

    @property
    def hosts(self) -> HostPolicy:
        """The Host names the app answers to (servekit.allowed_hosts)."""
        return HostPolicy.of(self.allowed_hosts, self.bound_host)

    @property
    def embedded(self) -> bool:
        """No LLM configured: the app starts the mock LLM in-process."""
        return self.llm_base_url is None

    @property
    def db_path(self) -> Path:
        return self.data_dir / "scaffold-guard.sqlite3"


def load_settings(environ: Mapping[str, str]) -> Settings:
    """Settings from `environ` (os.environ in production); SettingsError lists every problem."""
    problems: list[str] = []
    raw = {s.env: environ.get(s.env, s.default).strip() for s in SETTINGS}

    def parse(name: str, convert: Callable[[str], T], fallback: T) -> T:
        try:
            return convert(raw[name])
        except ValueError as exc:
            problems.append(f"{name}={raw[name]!r}: {exc}")
            return fallback

    base_url = raw["SG_LLM_BASE_URL"] or None
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        problems.append(f"SG_LLM_BASE_URL={base_url!r}: must start with http:// or https://")
    for name in ("SG_LLM_MODEL", "SG_LLM_API_KEY", "SG_DATA_DIR"):
        if not raw[name]:
            problems.append(f"{name} must not be empty")
    notes_dir = Path(raw["SG_NOTES_DIR"]) if raw["SG_NOTES_DIR"] else BUNDLED_NOTES
    if not notes_dir.is_dir():
        problems.append(f"SG_NOTES_DIR={raw['SG_NOTES_DIR']!r}: not a folder")
    data_dir = Path(raw["SG_DATA_DIR"] or "data")
    threshold = raw["SG_GROUNDING_THRESHOLD"]
    settings = Settings(
        llm_base_url=base_url.rstrip("/") if base_url else None,
        llm_model=raw["SG_LLM_MODEL"],
        llm_api_key=raw["SG_LLM_API_KEY"],
        llm_timeout_s=parse("SG_LLM_TIMEOUT_S", _positive_float, 60.0),
        llm_max_attempts=parse("SG_LLM_MAX_ATTEMPTS", _count(1, 10), 3),
        llm_retry_delay_s=parse("SG_LLM_RETRY_DELAY_S", _non_negative_float, 0.5),
        llm_retry_after_cap_s=parse("SG_LLM_RETRY_AFTER_CAP_S", _non_negative_float, 10.0),
        turn_timeout_s=parse("SG_TURN_TIMEOUT_S", _positive_float, 180.0),
        sse_keepalive_s=parse("SG_SSE_KEEPALIVE_S", _positive_float, 15.0),
        llm_pool_idle_s=parse("SG_LLM_POOL_IDLE_S", _positive_float, POOL_IDLE_S),
        agent_max_rounds=parse("SG_AGENT_MAX_ROUNDS", _count(0, 20), 4),
        agent_tools=parse("SG_AGENT_TOOLS", _switch, True),
        notes_dir=notes_dir,
        data_dir=data_dir,
        log_file=Path(raw["SG_LOG_FILE"]) if raw["SG_LOG_FILE"] else data_dir / "chat.log",
        grounding_threshold=parse("SG_GROUNDING_THRESHOLD", _float, 0.0) if threshold else None,
        scaffold_profiles=parse("SG_SCAFFOLD_PROFILES", parse_profiles, AUTO),
        allowed_hosts=parse("SG_ALLOWED_HOSTS", parse_allowed_hosts, ()),
        allowed_origins=parse("SG_ALLOWED_ORIGINS", parse_origins, frozenset[str]()),
    )
    if problems:
        raise SettingsError("invalid settings:\n  " + "\n  ".join(problems))
    return settings


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def _positive_float(text: str) -> float:
    value = _float(text)
    if value <= 0:
        raise ValueError("must be more than 0")
    return value


def _non_negative_float(text: str) -> float:
    value = _float(text)
    if value < 0:
        raise ValueError("must be 0 or more")
    return value


def _count(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError("must be a whole number") from None
        if not low <= value <= high:
            raise ValueError(f"must be {low} to {high}")
        return value

    return parse


def _switch(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("on", "1", "true", "yes"):
        return True
    if lowered in ("off", "0", "false", "no"):
        return False
    raise ValueError("must be on or off")


def settings_table() -> str:
    """The settings as a markdown table (the README's list is checked against it)."""
    rows = [
        f"| `{s.env}` | {f'`{s.default}`' if s.default else '(empty)'} | {s.help} |"
        for s in SETTINGS
    ]
    return "\n".join(["| variable | default | meaning |", "| --- | --- | --- |", *rows])
