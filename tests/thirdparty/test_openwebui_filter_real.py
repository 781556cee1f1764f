"""The pasteable filter inside the real Open WebUI 0.12.4: its loader, its stream handler.

tests/thirdparty/openwebui_filter_driver.py runs in Open WebUI's own venv (nothing of ours
is importable there, as in a user's install): it installs our generated file through the
admin page's own create handler and toggles, then puts the mock's streams, by Open WebUI's
OpenAI route and its Ollama route, through `streaming_chat_response_handler`, the code that
runs the stream filters, builds the message's output items, emits what the page receives
and calls the outlet. These tests read what it recorded. Two driver runs (the filter on,
and switched off by its valve as the control that the harness sees a leak), about 25 s in
all once Open WebUI is installed; run with `uv run pytest tests/thirdparty -n 0 -k filter_real`.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardrail.policy import MALFORMED_REPLY
from mock_llm import builtin_flows, serve_mock
from scaffold_guard.integrations.openwebui import build

from ..support.families import EVERY_FAMILY
from .openwebui import STARTUP_DEADLINE_S, Connection, open_webui_env
from .venvs import OPEN_WEBUI

DRIVER = Path(__file__).with_name("openwebui_filter_driver.py")
FLOWS = builtin_flows()
ROUTES = ("openai", "ollama")
STREAMED = sorted(name for name, flow in FLOWS.items() if flow.expect is not None)
LFM2 = "lfm2-test"
"""The model every flow is played under: a family flow's markup is text for it."""
PLAYS = [(name, LFM2) for name in STREAMED] + [
    (name, EVERY_FAMILY) for name in STREAMED if FLOWS[name].family is not None
]
"""(flow, model): each flow under LFM2, and each family flow under a name of its family too
(the filter's `auto` registry follows the model)."""


def play_id(value: object) -> str:
    """A play's test id part: the flow's name, and the model as `lfm2` or `every-family`."""
    return {LFM2: "lfm2", EVERY_FAMILY: "every-family"}.get(str(value), str(value))


WHOLE = ("scaffold-mixed", "scaffold-repeat")  # asked for without streaming
CONTROL = ("scaffold-mixed", "scaffold-split")

pytestmark = pytest.mark.timeout(2 * STARTUP_DEADLINE_S + 120)

Turn = dict[str, Any]


def run_driver(mock_url: str, folder: Path, turns: list[Turn], valves: dict[str, Any]) -> Any:
    """One driver run in a fresh Open WebUI data folder; what it recorded."""
    venv = OPEN_WEBUI.ensure()
    data = folder / "data"
    data.mkdir(parents=True)
    spec = {"filter": str(build.OUT), "mock": mock_url, "turns": turns, "valves": valves}
    (folder / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    env = open_webui_env(Connection("openai", f"{mock_url}/v1"), data)
    done = subprocess.run(
        [str(venv.python), str(DRIVER), str(folder / "spec.json"), str(folder / "out.json")],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=STARTUP_DEADLINE_S,
        check=False,
    )
    assert done.returncode == 0, f"driver failed:\n{done.stderr[-6000:]}"
    return json.loads((folder / "out.json").read_text(encoding="utf-8"))


def turn(name: str, route: str, tag: str, *, stream: bool = True, model: str = LFM2) -> Turn:
    tag += "" if model == LFM2 else "-family"
    message = f"When do backups run? [[mock:{name}#owf-{tag}-{route}-{name}]]"
    return {"name": name, "route": route, "message": message, "stream": stream, "model": model}


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with serve_mock() as url:
        yield url


@pytest.fixture(scope="module")
def guarded(mock_url: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    turns = [turn(name, route, "on", model=model) for route in ROUTES for name, model in PLAYS]
    turns += [turn(name, route, "whole", stream=False) for route in ROUTES for name in WHOLE]
    return run_driver(mock_url, tmp_path_factory.mktemp("owui-filter-on"), turns, {})


@pytest.fixture(scope="module")
def switched_off(mock_url: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    turns = [turn(name, "openai", "off") for name in CONTROL]
    folder = tmp_path_factory.mktemp("owui-filter-off")
    return run_driver(mock_url, folder, turns, {"enabled": False})


def recorded(run: Any, name: str, route: str, *, stream: bool = True, model: str = LFM2) -> Turn:
    wanted = (name, route, stream, model)
    found = [t for t in run["turns"] if (t["name"], t["route"], t["stream"], t["model"]) == wanted]
    assert len(found) == 1
    return found[0]


def output_text(output: list[dict[str, Any]] | None) -> str:
    """The answer's text as the page renders it: its `message` output items."""
    return "\n".join(
        "".join(part.get("text", "") for part in item.get("content") or [])
        for item in output or []
        if item.get("type") == "message"
    )


def reasoning_text(output: list[dict[str, Any]] | None) -> str:
    return "".join(
        part.get("text", "")
        for item in output or []
        if item.get("type") == "reasoning"
        for part in item.get("content") or []
    )


def never_shown(name: str, model: str) -> list[str]:
    """What must never reach the page in this flow under `model`: its canary, or its bare
    tokens (nothing where its markup is the answer's text, a family flow elsewhere)."""
    flow = FLOWS[name]
    if flow.expect_for(model) is not flow.expect:
        return []
    if flow.canary:
        return [flow.canary]
    return ["<|tool_calls|>", "<|tool_call|>"] if name == "scaffold-standalone" else []


def test_open_webui_loads_the_pasted_file_as_a_filter_with_its_frontmatter(guarded: Any):
    installed = guarded["installed"]
    assert installed["type"] == "filter"
    assert installed["manifest"] == build.frontmatter(build._project_version())


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    ("name", "model"),
    [p for p in PLAYS if p[0] != "tool-with-scaffold"],
    ids=play_id,
)
def test_the_page_shows_the_flows_text_or_the_malformed_copy(
    guarded: Any, name: str, model: str, route: str
):
    """What Open WebUI renders and saves of a streamed reply: the expect block's text for
    the model, or the malformed-reply copy where a recovery was due (a filter cannot send
    one)."""
    expect = FLOWS[name].expect_for(model)
    assert expect is not None
    expected = MALFORMED_REPLY if expect.recovery else expect.shown
    result = recorded(guarded, name, route, model=model)
    assert output_text(result["output"]) == expected.strip()  # Open WebUI strips the end
    assert result["saved_content"] == expected


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("name", "model"), PLAYS, ids=play_id)
def test_no_event_to_the_page_ever_carries_the_markup(
    guarded: Any, name: str, model: str, route: str
):
    """Every event Open WebUI emits to the page while streaming, deltas included."""
    emitted = recorded(guarded, name, route, model=model)["emitted"]
    text = json.dumps(emitted, ensure_ascii=False)
    assert [shown for shown in never_shown(name, model) if shown in text] == []


@pytest.mark.parametrize("route", ROUTES)
def test_thinking_with_markup_reaches_the_page_raw(guarded: Any, route: str):
    step = FLOWS["thinking-scaffold"].steps[0]
    assert reasoning_text(recorded(guarded, "thinking-scaffold", route)["output"]) == step.reasoning


@pytest.mark.parametrize("route", ROUTES)
def test_a_tool_round_loses_its_markup_and_gets_no_malformed_copy(guarded: Any, route: str):
    result = recorded(guarded, "tool-with-scaffold", route)
    calls = [item for item in result["output"] if item.get("type") == "function_call"]
    assert [call["name"] for call in calls] == ["read"]  # Open WebUI tried the call
    assert MALFORMED_REPLY not in json.dumps(result["emitted"], ensure_ascii=False)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", WHOLE)
def test_the_outlet_repairs_a_whole_answer_in_content_and_output(
    guarded: Any, name: str, route: str
):
    expect = FLOWS[name].expect
    assert expect is not None
    expected = MALFORMED_REPLY if expect.recovery else expect.shown
    messages = recorded(guarded, name, route, stream=False)["outlet_messages"]
    answer = messages[-1]
    assert (answer["content"], output_text(answer["output"])) == (expected, expected)


@pytest.mark.parametrize("route", ROUTES)
def test_a_whole_answer_reaches_the_page_raw_before_the_outlet(guarded: Any, route: str):
    """A limitation docs/integrations.md states: Open WebUI emits a non-streamed answer to
    the page before it runs the outlet, which then replaces it (`chat:outlet`)."""
    result = recorded(guarded, "scaffold-mixed", route, stream=False)
    canary = FLOWS["scaffold-mixed"].canary
    assert canary is not None
    types = [event["type"] for event in result["emitted"]]
    first_raw = next(i for i, e in enumerate(result["emitted"]) if canary in json.dumps(e))
    assert types.index("chat:outlet") > first_raw


@pytest.mark.parametrize("name", CONTROL)
def test_switched_off_by_its_valve_the_markup_reaches_the_page(switched_off: Any, name: str):
    """The control: the same harness sees the leak when the filter lets it through."""
    result = recorded(switched_off, name, "openai")
    canary = FLOWS[name].canary
    assert canary is not None
    assert canary in json.dumps(result["emitted"])
    assert canary in output_text(result["output"])
