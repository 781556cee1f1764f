"""mock_llm.record.redaction: what matches is `[REDACTED]`, across chunk boundaries, which are
mapped through the replacement."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mock_llm.flows.model import (
    CutFault,
    ErrorEventFault,
    HttpFault,
    MalformedFault,
    RecordedChunk,
    Step,
    ToolCall,
)
from mock_llm.record.redaction import (
    REDACTED,
    RedactionError,
    Redactor,
    compile_patterns,
)

SECRET = Redactor(compile_patterns([r"sk-[a-z0-9]+"]))


def test_a_match_is_replaced_whole():
    assert SECRET.text("key sk-abc123 here, sk-x too") == f"key {REDACTED} here, {REDACTED} too"
    assert SECRET.text("nothing") == "nothing"


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        (["my sk-", "abc", " ok"], ["my [REDACTED]", "", " ok"]),  # cut across chunks
        (["my ", "sk-abc", " ok"], ["my ", "[REDACTED]", " ok"]),  # boundaries at its edges
        (["sk-a", "bc ok", "!"], ["[REDACTED]", " ok", "!"]),
        (["a", "b"], ["a", "b"]),
        ([], []),
        (["", "sk-a", ""], ["", "[REDACTED]", ""]),
    ],
)
def test_chunk_boundaries_are_mapped_through_the_replacement(
    pieces: list[str], expected: list[str]
):
    assert SECRET.pieces(pieces) == expected


def test_overlapping_matches_of_several_patterns_merge_into_one():
    redactor = Redactor(compile_patterns(["abc", "bcd", "de"]))
    assert redactor.text("xabcdex abc") == f"x{REDACTED}x {REDACTED}"


def test_literal_secrets_are_redacted_and_short_ones_ignored():
    redactor = Redactor().with_secrets(["Bearer sk-live-9", "sk-live-9", "abc"])
    assert redactor.literals == ("Bearer sk-live-9", "sk-live-9")
    assert redactor.text("got sk-live-9, abc") == f"got {REDACTED}, abc"
    assert not Redactor()
    assert Redactor().with_secrets(["x"]) == Redactor()


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [("sk-(", "not a valid regular expression"), ("a*", "matches the empty text")],
)
def test_a_bad_pattern_is_refused_with_a_reason(pattern: str, problem: str):
    with pytest.raises(RedactionError, match=re.escape(problem)) as caught:
        compile_patterns([pattern])
    assert repr(pattern) in str(caught.value)


def test_an_empty_match_redacts_nothing():
    assert Redactor(compile_patterns([r"\bx?"])).text("a b") == "a b"


def test_a_recorded_step_is_redacted_part_by_part_keeping_its_chunks_and_gaps():
    step = Step(
        content="a sk-1b",
        reasoning="r",
        tool_calls=(ToolCall("f", '{"k": "sk-2"}', "c"),),
        fault=CutFault(9),
        recorded=(
            RecordedChunk("reasoning", "r", None, 5),
            RecordedChunk("content", "a sk", None, 1),
            RecordedChunk("content", "-1b", None, 2),
            RecordedChunk("call", '{"k": "sk-', 0, 3),
            RecordedChunk("call", '2"}', 0, 4),
        ),
    )
    redacted = SECRET.step(step)
    assert [(c.text, c.after_ms) for c in redacted.recorded] == [
        ("r", 5),
        (f"a {REDACTED}", 1),
        ("", 2),
        (f'{{"k": "{REDACTED}', 3),
        ('"}', 4),
    ]
    assert redacted.content == f"a {REDACTED}"
    assert redacted.tool_calls == (ToolCall("f", f'{{"k": "{REDACTED}"}}', "c"),)
    assert redacted.fault == CutFault(9)


def test_a_whole_step_and_fault_texts_are_redacted():
    step = Step(content="sk-1", reasoning="sk-2", tool_calls=(ToolCall("f", "sk-3"),))
    assert SECRET.step(step) == Step(
        content=REDACTED, reasoning=REDACTED, tool_calls=(ToolCall("f", REDACTED),)
    )
    for fault, redacted in [
        (HttpFault(401, "bad key sk-1", "t"), HttpFault(401, f"bad key {REDACTED}", "t")),
        (ErrorEventFault(1, "sk-1"), ErrorEventFault(1, REDACTED)),
        (MalformedFault(1, "{sk-1"), MalformedFault(1, "{" + REDACTED)),
    ]:
        assert SECRET.step(Step(fault=fault)).fault == redacted
    assert Redactor().step(step) is step


@given(
    st.lists(st.text("sk-ab1 x", max_size=6), max_size=8),
)
def test_redacted_pieces_join_into_the_redacted_text_and_keep_their_count(pieces: list[str]):
    redacted = SECRET.pieces(pieces)
    assert "".join(redacted) == SECRET.text("".join(pieces))
    assert len(redacted) == len(pieces)
    assert not re.search(r"sk-[a-z0-9]", "".join(redacted).replace(REDACTED, "#"))
