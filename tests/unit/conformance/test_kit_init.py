"""`python -m conformance init`'s pure parts: the profile it writes (read back by the kit),
how it tells a finished turn from a streaming one, and the side-call rules it suggests."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from conformance.__main__ import main as conformance_main
from conformance.init.command import main as init_main
from conformance.init.probe import InitFailed
from conformance.init.rules import done_rule, side_call_rules
from conformance.profiles.loader import load_profile
from conformance.profiles.model import DEFAULT_PROFILE, SetupStep
from conformance.profiles.writer import Found, FoundDone, FoundSetup, render_profile

EVERYTHING = Found(
    url="http://127.0.0.1:3000/",
    input='div[aria-label="Message \\"Foreign\\" Chat"]',
    send_with="click",
    send="button.fc-send",
    message="div.fc-bot",
    answer="div.fc-body",
    done=FoundDone("appears", ":is(button.fc-copy, button.fc-regen)", why="a Copy button"),
    error='p[role="alert"]',
    stop="button.fc-stop",
    thinking="div.fc-reasoning-body",
    tools=True,
    side_calls=("^Generate a concise title",),
    setup=(
        FoundSetup("click_if_visible", "button.fc-dismiss", why="a dialog in the way"),
        FoundSetup("select", 'select[name="model"]', "lfm2-1.2b", "nothing was chosen"),
    ),
)


def written(tmp_path: Path, found: Found) -> Path:
    path = tmp_path / "init.toml"
    path.write_text(render_profile(found, "my-chat"), encoding="utf-8")
    return path


def test_the_written_profile_reads_back_as_what_init_found(tmp_path: Path):
    profile = load_profile(written(tmp_path, EVERYTHING))
    assert profile.name == "my-chat"
    assert profile.selectors.input == 'div[aria-label="Message \\"Foreign\\" Chat"]'
    assert (profile.selectors.message, profile.selectors.answer) == ("div.fc-bot", "div.fc-body")
    assert (profile.selectors.error, profile.selectors.stop) == (
        'p[role="alert"]',
        "button.fc-stop",
    )
    assert profile.selectors.thinking == "div.fc-reasoning-body"
    assert (profile.send_with, profile.selectors.send) == ("click", "button.fc-send")
    assert (profile.done.attribute, profile.done.appears) == (
        None,
        ":is(button.fc-copy, button.fc-regen)",
    )
    assert profile.setup == (
        SetupStep("click_if_visible", "button.fc-dismiss", within_ms=2000),
        SetupStep("select", 'select[name="model"]', "lfm2-1.2b"),
    )
    assert profile.capabilities == frozenset({"thinking", "stop", "tools"})
    assert profile.side_calls == ("^Generate a concise title",)


def test_a_dialog_that_did_not_show_again_is_written_as_a_once_step(tmp_path: Path):
    dialog, picker = EVERYTHING.setup
    found = replace(EVERYTHING, setup=(replace(dialog, once=True), picker))
    profile = load_profile(written(tmp_path, found))
    assert profile.setup_once == (
        SetupStep("click_if_visible", "button.fc-dismiss", within_ms=2000),
    )
    assert profile.setup == (SetupStep("select", 'select[name="model"]', "lfm2-1.2b"),)


def test_a_part_init_did_not_find_is_a_comment_and_no_capability(tmp_path: Path):
    bare = Found(
        url="http://x/", input="textarea", send_with="enter", send=None, message=".msg",
        answer=":scope", done=FoundDone("quiet", why="nothing told them apart"),
        notes={"stop": "no new button said stop while the answer streamed"},
    )  # fmt: skip
    path = written(tmp_path, bare)
    text = path.read_text(encoding="utf-8")
    assert '# stop = "..."  # the stop control (G11): not found (no new button said stop' in text
    profile = load_profile(path)
    assert profile.capabilities == frozenset()
    assert profile.selectors.error == DEFAULT_PROFILE.selectors.error
    assert (profile.done.attribute, profile.done.appears, profile.done.disappears) == (
        None,
        None,
        None,
    )


def test_an_attribute_done_rule_keeps_its_streaming_value(tmp_path: Path):
    found = replace(EVERYTHING, done=FoundDone("attribute", "aria-busy", "true"))
    profile = load_profile(written(tmp_path, found))
    assert (profile.done.attribute, profile.done.streaming_value) == ("aria-busy", "true")


def snapshot(attributes: dict[str, str], buttons: list[str] | None = None) -> dict[str, object]:
    return {"attributes": attributes, "buttons": buttons or []}


def test_an_attribute_that_changes_when_the_turn_ends_is_the_done_rule():
    rule = done_rule(
        snapshot({"class": "msg done", "data-state": "done", "aria-busy": "false"}),
        snapshot({"class": "msg live", "data-state": "streaming", "aria-busy": "true"}),
        stop="button.stop",
    )
    assert (rule.kind, rule.selector_or_attribute, rule.streaming_value) == (
        "attribute",
        "aria-busy",
        "true",
    )


def test_a_class_change_alone_is_no_attribute_rule():
    rule = done_rule(snapshot({"class": "msg done"}), snapshot({"class": "msg live"}), None)
    assert rule.kind == "quiet"


def test_an_attribute_set_only_once_done_is_a_rule_whatever_it_streamed_as():
    rule = done_rule(snapshot({"data-finished": "1"}), snapshot({}), None)
    assert (rule.kind, rule.selector_or_attribute, rule.streaming_value) == (
        "attribute",
        "data-finished",
        "streaming",
    )


def test_a_button_that_shows_only_once_done_is_the_rule_without_an_attribute():
    rule = done_rule(
        snapshot({}, ["button.copy", "button.like"]), snapshot({}, ["button.like"]), "b.stop"
    )
    assert (rule.kind, rule.selector_or_attribute) == ("appears", "button.copy")


def test_a_stop_control_that_goes_away_is_the_rule_when_the_message_tells_nothing():
    rule = done_rule(snapshot({}), snapshot({}), "button.stop")
    assert (rule.kind, rule.selector_or_attribute) == ("disappears", "button.stop")


def chat(*messages: tuple[str, str]) -> dict[str, object]:
    return {"messages": [{"role": role, "content": text} for role, text in messages]}


def test_each_later_request_of_a_one_request_turn_suggests_a_rule():
    rules = side_call_rules([
        chat(("user", "When do backups run? [[mock:sg-init-answer#k]]")),
        chat(("system", "Generate a concise title (v2). Reply."), ("user", "x")),
        chat(("user", "### Task:\nSuggest 3 tags")),
        chat(("system", "Generate a concise title (v2). Reply."), ("user", "y")),
    ])  # fmt: skip
    assert rules == (r"^Generate a concise title \(v2\)\. Reply\.", "^### Task:")
    assert re.match(rules[0], "Generate a concise title (v2). Reply.")


def test_a_turn_of_one_request_suggests_no_rule():
    assert side_call_rules([chat(("user", "hello"))]) == ()


def test_the_kits_module_command_knows_only_init():
    assert conformance_main(["run"]) == 2


def test_init_will_not_overwrite_a_profile_without_force(tmp_path: Path):
    out = tmp_path / "profile.toml"
    out.write_text("name = 'mine'\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stopped:
        init_main(["http://127.0.0.1:9/", "--mock-url", "http://127.0.0.1:9", "--out", str(out)])
    assert stopped.value.code == 2
    assert out.read_text(encoding="utf-8") == "name = 'mine'\n"


def test_init_looks_again_for_the_answers_message_when_the_page_redrew_it(
    monkeypatch: pytest.MonkeyPatch,
):
    """Regression: on the reference page, whose answer's children are replaced at each
    render, init failed now and then with "no selector tells the answer's message from the
    question's": the element it found was detached by the next render before its next look."""
    from conformance.init import steps

    found = steps.Structure('[data-testid="message-assistant"]', '[data-testid="answer"]')
    looks = iter([(None, "detached", "no selector tells the answer's message from the question's"),
                  (found, "message", "")])  # fmt: skip
    monkeypatch.setattr(steps, "look_for_structure", lambda _probe, _key: next(looks))
    assert steps.find_structure(None, "k") == (found, "message")  # type: ignore[arg-type]


def test_init_says_why_when_no_look_finds_the_answers_message(monkeypatch: pytest.MonkeyPatch):
    from conformance.init import steps

    why = "no selector finds the answer's text inside its message"
    monkeypatch.setattr(steps, "look_for_structure", lambda _probe, _key: (None, "message", why))
    with pytest.raises(InitFailed, match=why):
        steps.find_structure(None, "k")  # type: ignore[arg-type]
