"""Control, bidi and line-break characters never break the app's one-line-per-turn log.

The chat log (`scaffold_guard.app.turn_log`) is read by tools and by the conformance kit line by
line, some of them with Python's `str.splitlines`, which also breaks at U+2028, U+2029, U+0085 and a
few C0 controls. So hostile text is sent through every way it can reach a turn, and after each
turn the whole log is checked: every line is one of the log's own shapes, the file reads the
same split at LF as split by `str.splitlines`, it holds no control (but LF), bidi or Unicode
line-break character at all, and the turn has exactly one well-formed `chat turn=` line.

The carriers: the user's question, the model's answer and thinking, the arguments and name
of a tool call, the markup the guardrail strips (its warning quotes the span, the one place
model text enters the log), the model service's error message (HTTP 400) and a mid-stream
error event, and the names of notes (listed, grepped and read by the model's tools). Each
carrier with each text is one turn of one test, the turns one after another: the lines each
turn added are checked as it ends, and a failure names the carrier and the text.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import httpx
import pytest

from guardrail.policy import strip_warning
from mock_llm import build_settings, serve_mock

from ...support.cases import check_each_async
from ...support.deadlines import DEADLINE_S
from ...support.hostile_text import HOSTILE_TEXT
from ...support.log_lines import LOG_LINE, TURN_LINE
from ...support.servers import TEST_FLOWS, app_settings, serve_app

Carrier = Literal[
    "question",
    "answer",
    "thinking",
    "tool-call",
    "stripped-markup",
    "upstream-error",
    "error-event",
    "file-name",
]
CARRIERS: tuple[Carrier, ...] = get_args(Carrier)

NAMES_FOLDER = "/homelab/odd/"
"""Where the notes with hostile names are: listed, grepped and read by the `file-name` flow."""

UNSAFE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
"""What the log must never hold: controls but LF, bidi controls, Unicode line breaks."""


def flow_name(carrier: Carrier, text_id: str) -> str:
    return f"log-{carrier}-{text_id}"


def hostile_flows() -> dict[str, Any]:
    """One flow per carrier and text (a flow file in JSON)."""
    flows: dict[str, Any] = {}
    for text_id, text in HOSTILE_TEXT.items():
        steps: dict[Carrier, list[dict[str, Any]]] = {
            "question": [{"content": "Backups run nightly."}],
            "answer": [{"content": f"Backups run {text} nightly.", "chunking": 3}],
            "thinking": [{"reasoning": text, "content": "Backups run nightly."}],
            "tool-call": [
                {
                    "tool_calls": [
                        {"name": "read", "arguments": {"path": f"/homelab/{text}.md"}},
                        {"name": "grep", "arguments": {"pattern": text}},
                        {"name": "list", "arguments": {"path": f"/homelab/{text}/"}},
                        {"name": text, "arguments": {"path": "/homelab/backups.md"}},
                    ]
                },
                {"content": "Backups run nightly."},
            ],
            "stripped-markup": [
                {"content": markup(text)},
                {"content": "Backups run nightly."},
            ],
            "upstream-error": [{"fault": {"kind": "http", "status": 400, "message": text}}],
            "error-event": [
                {
                    "content": "Backups run",
                    "fault": {"kind": "error_event", "after_chunks": 2, "message": text},
                }
            ],
            "file-name": [
                {
                    "tool_calls": [
                        {"name": "list", "arguments": {"path": NAMES_FOLDER}},
                        {"name": "grep", "arguments": {"pattern": "odd name"}},
                        {"name": "read", "arguments": {"path": NAMES_FOLDER + name_of(text)}},
                    ]
                },
                {"extract": {"sentences": 3}},
            ],
        }
        for carrier, flow_steps in steps.items():
            flows[flow_name(carrier, text_id)] = {"steps": flow_steps}
    return {"flows": flows}


def markup(text: str) -> str:
    return f"<|tool_call_start|>[read(path='{text}')]<|tool_call_end|>"


def name_of(text: str) -> str:
    return f"odd {text} name.md"


def write_notes(folder: Path) -> Path:
    (folder / "odd").mkdir(parents=True)
    (folder / "backups.md").write_text(
        "# Backups\n\nBackups run nightly at 02:00 with restic.\n", encoding="utf-8"
    )
    for text in HOSTILE_TEXT.values():
        (folder / "odd" / name_of(text)).write_text(
            "# Odd\n\nBackups of this odd name run nightly.\n", encoding="utf-8"
        )
    return folder


@dataclass(frozen=True)
class LogApp:
    url: str
    log_file: Path


@pytest.fixture(scope="module")
def log_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LogApp]:
    root = tmp_path_factory.mktemp("hostile-log")
    flows = root / "flows.json"
    # ASCII JSON: YAML reads a raw U+0085, U+2028 or U+2029 in a quoted string as a line break
    # and folds it into a space; escaped, it arrives as itself.
    flows.write_text(json.dumps(hostile_flows()), encoding="utf-8")
    with serve_mock(build_settings((TEST_FLOWS, flows))) as mock_url:
        settings = app_settings(
            mock_url, root / "data", SG_NOTES_DIR=str(write_notes(root / "notes"))
        )
        with serve_app(settings) as url:
            yield LogApp(url, settings.log_file)


async def turn_id_of(client: httpx.AsyncClient, message: str) -> str:
    """Ask, read the whole answer (the turn's log line is written before it ends), and give
    the turn's id."""
    response = await client.post("/api/chat", json={"message": message})
    assert response.status_code == 200, response.text
    return response.headers["x-turn-id"]


def question(carrier: Carrier, text: str, trigger: str) -> str:
    if carrier == "question":
        return f"When do backups run? {text} {trigger}"
    return f"When do backups run? {trigger}"


def assert_clean(text: str) -> list[str]:
    """`text` (lines of the log) is whole lines of the log's own shapes, split the same at LF
    as by `str.splitlines`, with no unsafe character; its lines."""
    lines = text.split("\n")
    assert lines.pop() == "", "the log does not end with a line break"
    assert text.splitlines() == lines, "a line break other than LF in the log"
    assert [line for line in lines if not LOG_LINE.fullmatch(line)] == []
    assert sorted({f"U+{ord(c):04X}" for c in UNSAFE.findall(text)}) == []
    return lines


async def test_hostile_text_leaves_one_clean_log_line_per_turn(log_app: LogApp, key: str):
    cases: list[tuple[str, tuple[int, Carrier, str]]] = [
        (f"{carrier}-{text_id}", (number, carrier, text_id))
        for number, (carrier, text_id) in enumerate(itertools.product(CARRIERS, HOSTILE_TEXT))
    ]
    written = 0  # how much of the log the turns before this one wrote
    async with httpx.AsyncClient(base_url=log_app.url, timeout=DEADLINE_S) as client:

        async def one_clean_line(case: tuple[int, Carrier, str]) -> None:
            nonlocal written
            number, carrier, text_id = case
            trigger = f"[[mock:{flow_name(carrier, text_id)}#{key}-{number}]]"
            turn_id = await turn_id_of(client, question(carrier, HOSTILE_TEXT[text_id], trigger))
            log = log_app.log_file.read_text(encoding="utf-8")
            text, written = log[written:], len(log)
            lines = assert_clean(text)
            turn = re.compile(TURN_LINE.format(turn=turn_id))
            assert len([line for line in lines if turn.fullmatch(line)]) == 1
            assert len([line for line in lines if f" turn={turn_id} mode=" in line]) == 1
            if carrier == "stripped-markup":
                # The text did reach the log, escaped: the strip warning quotes the span.
                span = markup(HOSTILE_TEXT[text_id])
                warning = strip_warning(len(span), 1, span)
                assert len([line for line in lines if line.endswith(f" WARNING {warning}")]) == 1

        assert await check_each_async(cases, one_clean_line) == len(CARRIERS) * len(HOSTILE_TEXT)
    assert_clean(log_app.log_file.read_text(encoding="utf-8"))  # the whole log, once more
