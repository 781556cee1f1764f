"""Smoke test of the self-test targets, over HTTP with no browser: each breaks as designed.

One mock (the built-in flows and smoke_flows.yaml) and every target are started once for
the module. Every target answers one scaffold-recover turn, and what it sent (frames, the
mock's journal for the turn's KEY, the log line's scaffold_stripped) is compared with what
its module says it does; the modes whose bug needs another flow get one more turn, next to
`good` on the same flow: split-leak on scaffold-split, no-error-frame and no-recovery on
scaffold-repeat, over-strip on lookalike, no-stop on a stopped slow answer,
filtered-thinking on thinking-scaffold, recovers-tool-rounds on tool-with-scaffold (and
always-correct's system message on every turn). The page-only
bugs (transient-flash, shadow-leak) are checked by what their frames carry and their page's
hooks; catching them in a browser is the kit's job. Every read runs under DEADLINE_S.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from contextlib import ExitStack, aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from guardrail.policy import CORRECTION_INSTRUCTION
from mock_llm import build_settings, serve_mock

from ..support.deadlines import DEADLINE_S
from ..support.journal import Entry, settled_journal
from ..support.sse import Turn, ask, data_events
from .targets import BREAKS, MODES, PROFILES, serve_target
from .targets.base import MALFORMED_REPLY, SYSTEM_PROMPT, TOOL_RESULT, TOOL_SPECS

SMOKE_FLOWS = Path(__file__).parent / "smoke_flows.yaml"
START = "<|tool_call_start|>"
HOOKS = (
    "chat-input",
    "chat-send",
    "chat-stop",
    "message-assistant",
    "answer",
    "thinking",
    "chat-error",
)


@dataclass(frozen=True)
class Served:
    url: str
    log_file: Path


@dataclass(frozen=True)
class Stack:
    mock_url: str
    targets: dict[str, Served]
    flows: dict[str, Any]

    def content(self, flow: str, step: int = 1) -> str:
        """The answer text of a flow's step (1-based), as the mock will stream it."""
        return self.flows[flow]["steps"][step - 1]["content"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    logs = tmp_path_factory.mktemp("target-logs")
    with ExitStack() as stack, serve_mock(build_settings((SMOKE_FLOWS,))) as mock_url:
        targets = {
            mode: Served(
                stack.enter_context(serve_target(mode, mock_url, logs / f"{mode}.log")),
                logs / f"{mode}.log",
            )
            for mode in MODES
        }
        flows = httpx.get(f"{mock_url}/_mock/flows", timeout=DEADLINE_S).json()["flows"]
        yield Stack(mock_url, targets, {flow["name"]: flow for flow in flows})


@dataclass(frozen=True)
class Seen:
    """One turn as a target answered it."""

    turn: Turn
    requests: list[Entry]
    stripped: int

    @property
    def kinds(self) -> list[str]:
        """The frame types in order, runs of one type shown once."""
        kinds = [frame["type"] for frame in self.turn.frames]
        return [kind for i, kind in enumerate(kinds) if i == 0 or kinds[i - 1] != kind]

    def joined(self, kind: str) -> str:
        return "".join(frame["text"] for frame in self.turn.of(kind))


async def play(stack: Stack, mode: str, flow: str, key: str, requests: int = 1) -> Seen:
    """Ask target `mode` for `flow` under `key`; its frames, journal and log's count."""
    served = stack.targets[mode]
    async with httpx.AsyncClient(base_url=served.url, timeout=DEADLINE_S) as client:
        turn = await ask(client, f"Tell me. [[mock:{flow}#{key}]]")
    assert turn.status == 200, turn.frames
    async with httpx.AsyncClient(base_url=stack.mock_url, timeout=DEADLINE_S) as mock:
        entries = await settled_journal(mock, key, requests)
    return Seen(turn, entries, stripped_in_log(served.log_file, turn.turn_id))


def stripped_in_log(log_file: Path, turn_id: str) -> int:
    """The scaffold_stripped=N of the turn's line (written before its last frame went out)."""
    pattern = re.compile(rf"chat turn={turn_id} .* retries=0 scaffold_stripped=(\d+)$")
    found = [m for line in log_file.read_text().splitlines() if (m := pattern.search(line))]
    assert len(found) == 1, f"want one log line for turn {turn_id}, found {len(found)}"
    return int(found[0].group(1))


def corrected(entry: Entry, question: list[dict[str, Any]]) -> bool:
    """Whether a request is the recovery of `question`: the correction folded in, no tools."""
    body = entry.body
    system, user = question
    return "tools" not in body and body["messages"] == [
        {"role": "system", "content": f"{system['content']}\n\n{CORRECTION_INSTRUCTION}"},
        user,
    ]


# --- every mode on scaffold-recover -------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    requests: int  # requests in the journal
    kinds: list[str]  # frame types, runs collapsed
    text: str  # the delta frames' text
    stripped: int  # the log line's scaffold_stripped
    raw: str = ""  # the raw frames' text (shadow-leak)
    answer: str | None = None  # the done frame's `answer` (transient-flash)


def expected_on_recover(mode: str, markup: str, clean: str) -> Expect:
    recovered = ["start", "retry", "delta", "done"]
    good = Expect(2, recovered, clean, len(markup))
    return {
        "raw-relay": Expect(1, ["start", "delta", "done"], markup, 0),
        "transient-flash": Expect(
            2,
            ["start", "delta", "retry", "delta", "done"],
            markup + clean,
            len(markup),
            answer=clean,
        ),
        "shadow-leak": Expect(
            2,
            ["start", "raw", "retry", "raw", "delta", "raw", "delta", "raw", "delta"],
            clean,
            len(markup),
            raw=markup + clean,
        ),
        "double-recovery": Expect(3, recovered, clean, len(markup)),
        "no-recovery": Expect(1, ["start", "done"], "", len(markup)),
        "wrong-log-field": Expect(2, recovered, clean, 0),
    }.get(mode, good)


@pytest.mark.parametrize("mode", list(MODES))
async def test_scaffold_recover(stack: Stack, mode: str, key: str) -> None:
    markup, clean = stack.content("scaffold-recover", 1), stack.content("scaffold-recover", 2)
    want = expected_on_recover(mode, markup, clean)
    seen = await play(stack, mode, "scaffold-recover", key, want.requests)

    assert seen.turn.last["type"] == "done"
    kinds = seen.kinds
    if mode == "shadow-leak":  # raw and delta frames alternate per piece: compare the start
        kinds = kinds[: len(want.kinds)]
    got = Expect(
        len(seen.requests),
        kinds,
        seen.turn.text,
        seen.stripped,
        raw=seen.joined("raw"),
        answer=seen.turn.last.get("answer"),
    )
    assert got == want
    question = seen.requests[0].body["messages"]
    system = SYSTEM_PROMPT
    if mode == "always-correct":  # the correction line up front, on every request
        system = f"{SYSTEM_PROMPT}\n\n{CORRECTION_INSTRUCTION}"
    assert question == [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Tell me. [[mock:scaffold-recover#{key}]]"},
    ]
    offers_tools = mode != "always-correct"
    assert seen.requests[0].body.get("tools") == (TOOL_SPECS if offers_tools else None)
    assert PROFILES[mode].name == ("profile.toml" if offers_tools else "profile-no-tools.toml")
    assert all(corrected(entry, question) for entry in seen.requests[1:])
    assert (START in seen.turn.text) == (mode in ("raw-relay", "transient-flash"))


# --- the modes whose bug needs another flow, next to good -------------------------------


@pytest.mark.parametrize("mode", ["good", "split-leak"])
async def test_char_chunked_markup(stack: Stack, mode: str, key: str) -> None:
    markup, clean = stack.content("scaffold-split", 1), stack.content("scaffold-split", 2)
    leaks = mode == "split-leak"
    seen = await play(stack, mode, "scaffold-split", key, 1 if leaks else 2)

    assert seen.turn.last["type"] == "done"
    if leaks:  # the whole markup, in one-character deltas, with nothing counted or recovered
        assert [len(f["text"]) for f in seen.turn.of("delta")] == [1] * len(markup)
        assert (seen.turn.text, len(seen.requests), seen.stripped) == (markup, 1, 0)
    else:
        assert (seen.turn.text, len(seen.requests), seen.stripped) == (clean, 2, len(markup))


@pytest.mark.parametrize("mode", ["good", "no-error-frame", "no-recovery"])
async def test_empty_recovery(stack: Stack, mode: str, key: str) -> None:
    markup = stack.content("scaffold-repeat")
    requests = 1 if mode == "no-recovery" else 2
    seen = await play(stack, mode, "scaffold-repeat", key, requests)

    assert (seen.turn.text, len(seen.requests), seen.stripped) == (
        "",
        requests,
        requests * len(markup),
    )
    if mode == "good":
        assert seen.turn.last == {
            "type": "error",
            "turn": seen.turn.turn_id,
            "detail": MALFORMED_REPLY,
        }
        assert not seen.turn.of("done")
    else:
        assert seen.turn.last["type"] == "done"
        assert not seen.turn.of("error")


@pytest.mark.parametrize("mode", ["good", "over-strip"])
async def test_lookalike(stack: Stack, mode: str, key: str) -> None:
    text = stack.content("lookalike")
    seen = await play(stack, mode, "lookalike", key)

    assert (seen.turn.last["type"], len(seen.requests), seen.stripped) == ("done", 1, 0)
    if mode == "good":
        assert seen.turn.text == text
    else:
        removed = ("tool_call", "<|some_other_token|>", "<|tool_call_end|>")
        assert not any(word in seen.turn.text for word in removed)
        assert seen.turn.text.endswith("a < b holds, and <<<< is fine.")


@pytest.mark.parametrize("mode", ["good", "filtered-thinking"])
async def test_thinking(stack: Stack, mode: str, key: str) -> None:
    step = stack.flows["thinking-scaffold"]["steps"][0]
    seen = await play(stack, mode, "thinking-scaffold", key)

    assert (seen.turn.text, len(seen.requests), seen.stripped) == (step["content"], 1, 0)
    if mode == "good":
        assert seen.joined("thinking") == step["reasoning"]
    else:
        assert START not in seen.joined("thinking")
        assert seen.joined("thinking").startswith("I could call  but no tools are offered")


@pytest.mark.parametrize("mode", ["good", "recovers-tool-rounds"])
async def test_tool_round(stack: Stack, mode: str, key: str) -> None:
    markup, clean = stack.content("tool-with-scaffold", 1), stack.content("tool-with-scaffold", 2)
    seen = await play(stack, mode, "tool-with-scaffold", key, 2)

    assert seen.turn.last["type"] == "done"
    assert (seen.turn.text, len(seen.requests), seen.stripped) == (clean, 2, len(markup))
    first, second = (entry.body for entry in seen.requests)
    assert first["tools"] == TOOL_SPECS
    if mode == "good":  # the tool ran, its result went back, tools offered again
        assert [kind for kind in seen.kinds if kind in ("tool", "retry")] == ["tool"]
        assert second["tools"] == TOOL_SPECS
        assistant, result = second["messages"][2:]
        assert second["messages"][:2] == first["messages"]
        assert assistant["content"] is None
        [call] = assistant["tool_calls"]
        assert call["function"]["name"] == "read"
        assert result == {"role": "tool", "tool_call_id": call["id"], "content": TOOL_RESULT}
        assert CORRECTION_INSTRUCTION not in json.dumps(second, ensure_ascii=False)
    else:  # the tool round recovered: the call dropped, the corrected question, no tools
        assert [kind for kind in seen.kinds if kind in ("tool", "retry")] == ["retry"]
        assert corrected(seen.requests[1], first["messages"])


@pytest.mark.parametrize("mode", ["good", "no-stop"])
async def test_stop(stack: Stack, mode: str, key: str) -> None:
    """Leave after two deltas: good closes the upstream at once, no-stop reads it to the end."""
    served = stack.targets[mode]
    body = {"message": f"How do backups run? [[mock:smoke-slow#{key}]]"}
    deltas = 0
    async with (
        asyncio.timeout(DEADLINE_S),
        httpx.AsyncClient(base_url=served.url, timeout=DEADLINE_S) as client,
        client.stream("POST", "/api/chat", json=body) as response,
        aclosing(data_events(response)) as events,
    ):
        async for event in events:
            deltas += json.loads(event)["type"] == "delta"
            if deltas == 2:
                break
    async with httpx.AsyncClient(base_url=stack.mock_url, timeout=DEADLINE_S) as mock:
        (entry,) = await settled_journal(mock, key)

    want = "completed" if mode == "no-stop" else "client_disconnected"
    assert entry.outcome == want


# --- the page ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(MODES))
async def test_page_hooks(stack: Stack, mode: str) -> None:
    async with httpx.AsyncClient(base_url=stack.targets[mode].url, timeout=DEADLINE_S) as client:
        page = await client.get("/")
        empty = await client.post("/api/chat", json={"message": "  "})

    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    for hook in HOOKS:
        assert f'data-testid="{hook}"' in page.text
    assert f'data-target-mode="{mode}"' in page.text
    assert ("attachShadow" in page.text) == (mode == "shadow-leak")
    assert empty.status_code == 422
    assert mode in BREAKS
