"""servekit.openai_chunks: a chunk's parts read leniently, as the app's model client, the
guard proxy and the mock's recorder all read them."""

from __future__ import annotations

from typing import Any

import pytest

from servekit.openai_chunks import (
    choices_of,
    delta_of,
    first_choice,
    message_of,
    reasoning_texts,
    tool_call_items,
)


@pytest.mark.parametrize("choices", [None, "x", 3, {"index": 0}])
def test_choices_that_are_not_a_list_are_none(choices: object):
    assert choices_of({"choices": choices}) == []


def test_only_the_choices_that_are_objects_count():
    assert choices_of({"choices": [1, {"index": 0}, None, {"index": 1}]}) == [
        {"index": 0},
        {"index": 1},
    ]


@pytest.mark.parametrize(
    ("choices", "first"),
    [
        ([{"index": 1, "a": 1}, {"index": 0, "a": 0}], {"index": 0, "a": 0}),
        ([{"a": 0}], {"a": 0}),  # no index is choice 0
        ([{"index": 2, "a": 2}, {"index": 3}], {"index": 2, "a": 2}),  # no choice 0: the first
        ([], {}),
    ],
)
def test_the_first_choice_is_choice_0_else_the_first(choices: list[dict[str, Any]], first: Any):
    assert first_choice(choices) == first


def test_a_delta_or_message_that_is_not_an_object_reads_as_absent():
    assert delta_of({"delta": {"content": "a"}}) == {"content": "a"}
    assert delta_of({"delta": "a"}) is None
    assert message_of({"message": {"content": "a"}}) == {"content": "a"}
    assert message_of({"message": None}) is None


def test_the_reasoning_fields_that_hold_text_in_the_preferred_order():
    delta = {"reasoning": "r", "reasoning_content": "rc", "content": "c"}
    assert list(reasoning_texts(delta).items()) == [("reasoning_content", "rc"), ("reasoning", "r")]
    assert reasoning_texts({"reasoning_content": "", "reasoning": 5}) == {}


def test_tool_call_pieces_keep_their_places_in_the_list():
    delta = {"tool_calls": [None, {"index": 0, "id": "a"}, "x", {"function": {}}]}
    assert tool_call_items(delta) == [(1, {"index": 0, "id": "a"}), (3, {"function": {}})]
    assert tool_call_items({"tool_calls": None}) == []
