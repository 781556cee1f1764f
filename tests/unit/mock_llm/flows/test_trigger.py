from __future__ import annotations

import pytest

from mock_llm.flows.trigger import Trigger, TriggerError, find_trigger, last_user_text, message_text
from servekit.trigger_grammar import TRIGGER, strip_triggers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[[mock:clean]]", Trigger("clean", None)),
        ("tell me [[mock:scaffold-recover#t-01_a]] now", Trigger("scaffold-recover", "t-01_a")),
        ("twice [[mock:clean#k]] and [[mock:clean#k]]", Trigger("clean", "k")),
        ("no trigger here", None),
        ("brackets [[not-mock:x]] are prose", None),
    ],
)
def test_find_trigger(text: str, expected: Trigger | None):
    assert find_trigger(text) == expected


@pytest.mark.parametrize(
    "text",
    ["[[mock:]]", "[[mock:bad name]]", "[[mock:clean#]]", "[[mock:clean#a/b]]", "[[mock:clean"],
)
def test_malformed_trigger_is_an_error_not_the_default_flow(text: str):
    with pytest.raises(TriggerError, match="malformed trigger"):
        find_trigger(text)


def test_two_different_triggers_are_ambiguous():
    with pytest.raises(TriggerError, match="more than one trigger"):
        find_trigger("[[mock:clean#a]] [[mock:clean#b]]")


@pytest.mark.parametrize(
    "trigger", ["[[mock:clean]]", "[[mock:scaffold-recover#t-01_a]]", "[[mock:tool-then-answer#k]]"]
)
def test_strip_triggers_removes_a_well_formed_trigger(trigger: str):
    assert TRIGGER.fullmatch(trigger)
    assert strip_triggers(f"when{trigger}do backups run") == "when do backups run"


@pytest.mark.parametrize(
    "trigger",
    ["[[MOCK:clean]]", "[[Mock:clean#k]]", "[[mock:]]", "[[mock:bad name]]", "[[mock:a[b]]"],
)
def test_strip_triggers_removes_malformed_and_uppercase_triggers(trigger: str):
    assert strip_triggers(f"backups {trigger} run") == "backups   run"


def test_strip_triggers_removes_every_trigger_in_the_text():
    assert strip_triggers("[[mock:a#1]]x[[MOCK:b]]y[[mock:c#2]]") == " x y "


def test_strip_triggers_ends_an_unclosed_trigger_at_whitespace():
    assert strip_triggers("[[mock:clean when do backups run") == "  when do backups run"


def test_strip_triggers_does_not_reach_past_the_end_of_the_line():
    assert strip_triggers("[[mock:clean\nwhen do backups run]]") == " \nwhen do backups run]]"


@pytest.mark.parametrize("text", ["what does [[backups]] say", "mock: [[not-mock:x]]", ""])
def test_strip_triggers_keeps_other_text(text: str):
    assert strip_triggers(text) == text


def test_last_user_text_skips_later_assistant_and_tool_messages():
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "first [[mock:clean#1]]"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "second [[mock:tool-then-answer#2]]"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "content": "file text", "tool_call_id": "c1"},
    ]
    assert last_user_text(messages) == "second [[mock:tool-then-answer#2]]"


def test_last_user_text_is_empty_without_a_user_message():
    assert last_user_text([{"role": "system", "content": "x"}]) == ""


def test_message_text_joins_the_text_parts_of_a_content_list():
    parts = [
        {"type": "text", "text": "a"},
        {"type": "image_url", "image_url": {}},
        {"type": "text", "text": "b"},
    ]
    assert message_text(parts) == "a\nb"


@pytest.mark.parametrize("content", [None, 42, {"text": "x"}, ["loose string"]])
def test_message_text_of_odd_content_is_empty(content: object):
    assert message_text(content) == ""


@pytest.mark.parametrize("text", ["[[MOCK:clean]]", "ask [[Mock:clean#k1]] now", "[[mOcK:x"])
def test_a_trigger_in_another_case_is_an_error_that_says_so(text: str):
    """Regression (issue 12): `[[MOCK:clean]]` silently played the default flow."""
    with pytest.raises(TriggerError, match=r"malformed trigger .*'mock' is written in lowercase"):
        find_trigger(text)
