"""The filter's semantics as a matrix: spans, splits at every offset, look-alikes, hold-back."""

from __future__ import annotations

import pytest

from guardrail.model_profiles import registry_for
from guardrail.patterns import Registry
from guardrail.registries import DEFAULT_REGISTRY
from guardrail.scaffolding import PREVIEW_CHARS, ScaffoldingFilter

from ...support.cases import check_each
from ..helpers.scaffolding import chunked, cut_at, run, strip

START, END = "<|tool_call_start|>", "<|tool_call_end|>"
SPAN = f"{START}[read(path='/homelab/backup-notes.md')]{END}"
TEXT = f"Let me check. {SPAN}Backups run nightly."
EXPECTED = "Let me check. Backups run nightly."


def test_span_in_one_chunk_is_stripped():
    out, f = run([TEXT])
    assert out == EXPECTED
    assert f.stripped_chars == len(SPAN)
    assert (f.stripped_spans, f.first_span) == (1, SPAN)


def test_span_split_in_two_at_every_offset_is_stripped_the_same():
    def stripped(offset: int) -> None:
        out, f = run(cut_at(TEXT, offset))
        assert out == EXPECTED
        assert f.stripped_chars == len(SPAN)

    offsets = range(len(TEXT) + 1)
    assert check_each(((f"offset {n}", n) for n in offsets), stripped) == len(offsets)


def test_span_split_inside_both_markers_is_stripped():
    def stripped(cuts: tuple[int, int]) -> None:
        assert run(cut_at(TEXT, *cuts))[0] == EXPECTED

    cases = [
        (f"start+{in_start} end+{in_end}", (TEXT.index(START) + in_start, TEXT.index(END) + in_end))
        for in_start in range(1, len(START))
        for in_end in range(1, len(END))
    ]
    assert check_each(cases, stripped) == (len(START) - 1) * (len(END) - 1)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 19, 64])
def test_span_in_fixed_size_chunks_is_stripped(size: int):
    assert run(chunked(TEXT, size))[0] == EXPECTED


def test_several_spans_in_one_chunk_are_all_stripped():
    out, f = run([f"a{SPAN}b{SPAN}{SPAN}c"])
    assert out == "abc"
    assert (f.stripped_spans, f.first_span) == (3, SPAN)


@pytest.mark.parametrize(
    "body",
    [
        "[read(path='/homelab/a.md')]\n[grep(pattern=\"x\")]",
        '[f(a="quote \\" inside", b=\'single\')]',
        "[lire(chemin='/homelab/réseau — ünïcödé ✓ 日本語.md')]",
        "",
    ],
    ids=["newlines", "quotes", "non-ascii", "empty"],
)
def test_span_bodies_of_any_content_are_stripped(body: str):
    assert strip(f"x{START}{body}{END}y") == "xy"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<|tool_calls|>The job runs.", "The job runs."),
        ("The job<|tool_calls|> runs.", "The job runs."),
        ("The job runs.<|tool_call|>", "The job runs."),
        ("<|tool_call|><|tool_calls|><|tool_call|>", ""),
        ("a<|tool_call|>b<|tool_calls|>c", "abc"),
    ],
)
def test_standalone_tokens_are_stripped_anywhere(text: str, expected: str):
    for size in (1, 4, len(text)):
        assert run(chunked(text, size))[0] == expected


LOOKALIKES = [
    "[TOOL_CALLS] is Mistral's marker, <function=x> Qwen3-Coder's, <tool_calls> MiniMax-M1's",
    "<start_function_call> is FunctionGemma's, <minimax:tool_call> MiniMax-M2's",
    "We call tool_call and tool_call_start by name here.",
    "An unknown <|some_other_token|> stays.",
    "A lone <|tool_call_end|> closes nothing.",
    "Math: a < b and b > c, a <= b.",
    "<|",
    "<<<<",
    "<| tool_call_start |> with spaces is not the token",
    "<|TOOL_CALL_START|> in capitals is not the token",
    "<tool_call>Hermes markup is off by default</tool_call>",
    "[TOOL_CALLS] and <|python_tag|> are opt-in profiles",
    "|tool_call_start|> without its angle bracket",
]


REGISTRIES = {
    "default": DEFAULT_REGISTRY,
    "auto lfm2-1.2b": registry_for("lfm2-1.2b"),
    "auto unknown": registry_for("my-local-model"),
    "auto no model": registry_for(None),
}
SPECIAL_ONLY_UNDER_DEFAULT = "[TOOL_CALLS] and <|python_tag|> are opt-in profiles"


def _lookalike_cases() -> list[tuple[str, str]]:
    """Every look-alike under every registry, but Llama's special token: `auto` strips
    special-token spellings for any model name (test_model_profiles.py)."""
    return [
        (text, name)
        for name in REGISTRIES
        for text in LOOKALIKES
        if name == "default" or text != SPECIAL_ONLY_UNDER_DEFAULT
    ]


def test_lookalikes_are_never_stripped():
    def shown_whole(case: tuple[str, Registry, int]) -> None:
        text, registry, size = case
        out, f = run(chunked(text, size), registry)
        assert out == text
        assert f.stripped_chars == 0
        assert (f.stripped_spans, f.first_span) == (0, "")

    cases = [
        (f"{name}, {size}-char chunks: {text!r}", (text, REGISTRIES[name], size))
        for text, name in _lookalike_cases()
        for size in (1, 3, 1000)
    ]
    assert check_each(cases, shown_whole) == 3 * len(_lookalike_cases())


@pytest.mark.parametrize(
    ("chunk", "held"),
    [
        ("abc <|tool", "<|tool"),
        ("abc <|tool_call_start|", "<|tool_call_start|"),
        ("abc <", "<"),
        ("abc <|", "<|"),
        ("abc <|tool_calls", "<|tool_calls"),
        ("abc <|tool_call|x", ""),
        ("abc <|x", ""),
        ("a < b", ""),
        ("<<<<", "<"),
        ("<|<|tool_ca", "<|tool_ca"),
        ("plain prose", ""),
    ],
)
def test_hold_back_is_exactly_the_longest_suffix_that_could_become_a_marker(chunk: str, held: str):
    f = ScaffoldingFilter()
    out = f.feed(chunk)
    assert f.held == held
    assert out + held == chunk


@pytest.mark.parametrize(
    ("chunk", "held"),
    [("abc<|tool_call_e", "<|tool_call_e"), ("abc<", "<"), ("abc<|tool_call_start|>", "")],
)
def test_inside_a_span_only_its_end_marker_is_held(chunk: str, held: str):
    f = ScaffoldingFilter()
    assert f.feed(START) == ""
    assert f.feed(chunk) == ""
    assert f.held == held


@pytest.mark.parametrize("chunk", ["Hello", " world", "a < b", "x" * 5000, "", "\n\n"])
def test_clean_text_is_never_delayed(chunk: str):
    f = ScaffoldingFilter()
    assert f.feed("before ") == "before "
    assert f.feed(chunk) == chunk


def test_held_text_is_released_as_soon_as_it_cannot_be_a_marker():
    f = ScaffoldingFilter()
    assert f.feed("x <|tool_") == "x "
    assert f.feed("cal") == ""
    assert f.feed("endar") == "<|tool_calendar"


@pytest.mark.parametrize("tail", ["<", "<|", "<|tool_call_st", "<|tool_call_start|"])
def test_partial_start_marker_at_stream_end_is_emitted_as_is(tail: str):
    text = f"The log ends with {tail}"
    for size in (1, 4, len(text)):
        out, f = run(chunked(text, size))
        assert out == text
        assert f.stripped_chars == 0


def test_unterminated_span_is_stripped_through_the_end_and_counted():
    text = f"Backups run nightly. {START}[read(path='/homelab/x.md')"
    for size in (1, 6, len(text)):
        out, f = run(chunked(text, size))
        assert out == "Backups run nightly. "
        assert f.stripped_chars == len(text) - len(out)
        assert (f.stripped_spans, f.first_span) == (1, text[len(out) :])


def test_unterminated_span_ending_in_a_partial_end_marker_is_stripped_whole():
    out, f = run([f"ok {START}body<|tool_call_en"])
    assert out == "ok "
    assert f.stripped_chars == len(f"{START}body<|tool_call_en")


def test_start_marker_quoted_inside_a_span_is_data():
    assert strip(f"a{START}x{START}y{END}b") == "ab"


def test_text_after_a_span_is_scanned_again():
    assert strip(f"{SPAN}<|tool_calls|>{SPAN}tail") == "tail"


def test_empty_chunks_change_nothing():
    chunks = ["", "Let me", "", " check.", "", START, "", "[x]", END, "", " Done.", ""]
    out, f = run(chunks)
    assert out == "Let me check. Done."
    assert f.stripped_chars == len(START) + 3 + len(END)


def test_span_preview_is_cut_at_200_characters():
    body = "y" * 500
    out, f = run(chunked(f"a{START}{body}{END}b", 37))
    assert out == "ab"
    assert f.first_span == (START + body)[:PREVIEW_CHARS]
    assert f.stripped_chars == len(START) + 500 + len(END)


def test_ten_megabyte_unterminated_span_is_never_buffered():
    f = ScaffoldingFilter()
    assert f.feed(f"ok {START}") == "ok "
    block = "z" * 65536
    for _ in range(160):
        assert f.feed(block) == ""
        assert len(f.held) < len(END)
    assert f.flush() == ""
    assert f.stripped_chars == len(START) + 160 * 65536
    assert len(f.first_span) == PREVIEW_CHARS


def test_only_the_first_spans_preview_is_kept_however_many_spans_come():
    f = ScaffoldingFilter()
    first = f"{START}first{END}"
    assert f.feed(first) == ""
    for n in range(10_000):
        assert f.feed(f"{START}span {n}{END}") == ""
    assert f.flush() == ""
    assert (f.stripped_spans, f.first_span) == (10_001, first)


def test_a_feed_after_flush_is_an_error():
    f = ScaffoldingFilter()
    f.feed("done")
    f.flush()
    with pytest.raises(RuntimeError, match="after flush"):
        f.feed("more")


def test_flush_after_a_clean_stream_returns_nothing():
    f = ScaffoldingFilter()
    f.feed("all clean")
    assert f.flush() == ""
