"""guardrail.policy: the recovery rule, the corrected messages, the strip warning, visibility."""

from __future__ import annotations

import ast

import pytest

from guardrail.policy import (
    CORRECTION_INSTRUCTION,
    RoundFilter,
    needs_recovery,
    strip_warning,
    system_with_correction,
    with_correction,
)
from guardrail.registries import DEFAULT_REGISTRY
from scaffold_guard.app.rag.types import ChatMessage

SPAN = "<|tool_call_start|>[read(path='/homelab/backup-notes.md')]<|tool_call_end|>"


def test_the_correction_line_is_the_contracts_verbatim() -> None:
    assert CORRECTION_INSTRUCTION == (
        "Your previous reply contained raw tool-call markup, which is not interpreted here."
        " Answer the user's question directly in plain text — no tool syntax."
    )


@pytest.mark.parametrize(
    ("stripped", "visible", "tool_calls", "expected"),
    [
        (len(SPAN), False, 0, True),  # scaffolding was the whole answer (G2)
        (len(SPAN), True, 0, False),  # mixed with real content (G4)
        (0, False, 0, False),  # empty, but nothing stripped: not a guardrail matter
        (len(SPAN), False, 1, False),  # a real tool call came with it (G12)
        (0, True, 0, False),  # clean (G1)
    ],
    ids=["scaffold-only", "mixed", "empty-clean", "with-tool-call", "clean"],
)
def test_recovery_is_due_only_for_a_stripped_empty_round_without_tool_calls(
    stripped: int, visible: bool, tool_calls: int, expected: bool
) -> None:
    assert (
        needs_recovery(stripped_chars=stripped, visible=visible, tool_calls=tool_calls) is expected
    )


def test_the_correction_extends_the_single_system_message_and_keeps_the_user_last() -> None:
    messages: list[ChatMessage] = [
        {"role": "system", "content": "You answer from the notes."},
        {"role": "user", "content": "When do backups run?"},
    ]

    corrected = with_correction(messages)

    assert [m["role"] for m in corrected] == ["system", "user"]
    assert corrected[0]["content"] == f"You answer from the notes.\n\n{CORRECTION_INSTRUCTION}"
    assert corrected[1] == messages[1]
    assert messages[0]["content"] == "You answer from the notes."  # the input is untouched


def test_the_correction_keeps_tool_results_last_after_a_tool_round() -> None:
    messages: list[ChatMessage] = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Q"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "call_1", "content": "contents"},
    ]

    corrected = with_correction(messages)

    assert [m["role"] for m in corrected] == ["system", "user", "assistant", "tool"]
    assert corrected[1:] == messages[1:]


def test_without_a_system_message_the_correction_becomes_the_first_one() -> None:
    corrected = with_correction([{"role": "user", "content": "Q"}])

    assert corrected == [
        {"role": "system", "content": CORRECTION_INSTRUCTION},
        {"role": "user", "content": "Q"},
    ]


def test_the_corrected_system_message_keeps_its_other_fields() -> None:
    messages = [
        {"role": "system", "content": "Be brief.", "name": "ops"},
        {"role": "user", "content": "hi"},
    ]
    system, user = with_correction(messages)
    assert system == {
        "role": "system",
        "content": f"Be brief.\n\n{CORRECTION_INSTRUCTION}",
        "name": "ops",
    }
    assert user is messages[1]
    assert messages[0]["content"] == "Be brief."  # the caller's list is not touched


def test_system_content_given_as_parts_gets_one_more_text_part() -> None:
    parts = [{"type": "text", "text": "Be brief."}]
    [system] = with_correction([{"role": "system", "content": parts}])
    assert system["content"] == [*parts, {"type": "text", "text": CORRECTION_INSTRUCTION}]


@pytest.mark.parametrize("content", [None, 7], ids=["none", "a-number"])
def test_system_content_that_is_not_text_becomes_the_correction(content: object) -> None:
    [system] = with_correction([{"role": "system", "content": content}])
    assert system["content"] == CORRECTION_INSTRUCTION


@pytest.mark.parametrize(
    ("system", "corrected"),
    [
        ("Be brief.", f"Be brief.\n\n{CORRECTION_INSTRUCTION}"),
        (
            [{"type": "text", "text": "Be brief."}],
            [
                {"type": "text", "text": "Be brief."},
                {"type": "text", "text": CORRECTION_INSTRUCTION},
            ],
        ),
        (None, CORRECTION_INSTRUCTION),
        (7, CORRECTION_INSTRUCTION),
    ],
    ids=["text", "text-blocks", "none", "a-number"],
)
def test_a_system_prompt_outside_the_messages_takes_the_correction_the_same_way(
    system: object, corrected: object
) -> None:
    assert system_with_correction(system) == corrected


def test_the_strip_warning_has_the_fixed_shape_with_the_span_single_quoted() -> None:
    assert strip_warning(len(SPAN), 1, SPAN) == (
        f"agent: stripped {len(SPAN)} chars of tool-scaffolding in round 1:"
        " '<|tool_call_start|>[read(path=\\'/homelab/backup-notes.md\\')]<|tool_call_end|>'"
    )


def test_the_strip_warning_stays_one_line_and_cuts_the_span_at_200_characters() -> None:
    span = "<|tool_call_start|>" + "line\n" * 100

    warning = strip_warning(len(span), 2, span)

    assert "\n" not in warning
    quoted = warning.split("in round 2: ", 1)[1]
    assert ast.literal_eval(quoted) == span[:200]


@pytest.mark.parametrize(
    ("chunks", "visible"),
    [
        ([SPAN], False),
        ([SPAN, "\n  \t"], False),
        (["  ", SPAN, "Backups run nightly."], True),
        (["<|tool_call_st"], True),  # a partial marker at the end is text (G8)
        ([], False),
    ],
)
def test_a_round_is_visible_only_when_non_whitespace_text_is_shown(
    chunks: list[str], visible: bool
) -> None:
    round_filter = RoundFilter(DEFAULT_REGISTRY)
    for chunk in chunks:
        round_filter.feed(chunk)
    round_filter.flush()

    assert round_filter.visible is visible
