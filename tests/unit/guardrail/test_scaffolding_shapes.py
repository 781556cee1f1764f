"""What a pattern may say beyond its markers: a hint that must follow its opener, where the
opener may begin (a word start, the answer's start), a trailer stripped after a span, a
braced body; and the shape grammar behind hints (guardrail/shapes.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guardrail.patterns import TRAILER_SPACE, Pattern
from guardrail.registries import CALL_BODY, registry_with
from guardrail.scaffolding import PREVIEW_CHARS, ScaffoldingFilter
from guardrail.shapes import NAME, SPACE, Chars, Lit, alt, compiled, max_len, seq

from ..helpers.scaffolding import chunked, cut_at, reasoned, run

HERMES = registry_with("hermes")
QWEN3_CODER = registry_with("hermes", "qwen3-coder")
GEMMA = registry_with("gemma", "gemma-plain")
RESIDUE = registry_with("harmony-residue")


def every_chunking(text: str, registry: tuple[Pattern, ...]) -> set[str]:
    """The outputs of `text` whole, in 1- and 3-character chunks and cut at every offset."""
    outputs = {run(chunked(text, size), registry)[0] for size in (1, 3, len(text) or 1)}
    return outputs | {run(cut_at(text, i), registry)[0] for i in range(len(text) + 1)}


# --- hints ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Qwen wraps each call in <tool_call> tags and closes it with </tool_call>.",
        "The `<tool_call>` element starts a call.",
        "A <tool_call> opener, then prose.",
        "It ends with <tool_call>",
        "<tool_call>\n\n\n\n\nfive blank lines, then prose",
    ],
)
def test_a_plain_opener_not_followed_by_its_hint_is_text(text: str):
    assert every_chunking(text, HERMES) == {text}


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('a<tool_call>{"name": "f"}</tool_call>b', "ab"),
        ('a<tool_call>\n  [{"name": "f"}]</tool_call>b', "ab"),
        ("a<tool_call>\n<function=f></function></tool_call>b", "ab"),
        ("a<tool_call>Bash<arg_key>k</arg_key></tool_call>b", "ab"),
        ("a<tool_call>Bash\n<arg_key>k</arg_key></tool_call>b", "ab"),
        ("a<tool_call>list_files</tool_call>b", "ab"),  # GLM's call with no arguments
    ],
)
def test_a_plain_opener_followed_by_its_hint_opens_its_span(text: str, shown: str):
    assert every_chunking(text, HERMES) == {shown}


def test_an_undecided_hint_holds_the_opener_and_what_follows():
    f = ScaffoldingFilter(HERMES)
    assert f.feed("Sure. <tool_call>  ") == "Sure. "
    assert f.held == "<tool_call>  "
    assert f.feed("{") == ""
    assert f.held == ""


def test_an_undecided_hint_at_stream_end_is_text():
    out, f = run(["Sure. <tool_call>", " "], HERMES)
    assert (out, f.stripped_chars) == ("Sure. <tool_call> ", 0)


def test_an_opener_inside_a_failed_hint_is_still_found():
    text = "<tool_call> (x)<|tool_call_start|>[f()]<|tool_call_end|>y"
    assert every_chunking(text, HERMES) == {"<tool_call> (x)y"}


def test_a_token_keeps_the_text_its_hint_looked_at():
    registry = (Pattern("t", "token", "<t>", source="test", hint=Lit("{")),)
    assert every_chunking("a<t>{b}", registry) == {"a{b}"}


# --- boundaries ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Sure. call:write_file{content:hello,path:a.txt}", "Sure. "),
        ("call:f{}", ""),
        ("(call:f{a:1})", "()"),
        ("Recall:f{a:1} is not a call.", "Recall:f{a:1} is not a call."),
        ("syscall:f{a:1}", "syscall:f{a:1}"),
        ("A phone call: {not a call}", "A phone call: {not a call}"),
        ("call:f{ spaced }", "call:f{ spaced }"),
    ],
)
def test_a_word_start_opener_counts_only_at_a_word_start(text: str, shown: str):
    assert every_chunking(text, GEMMA) == {shown}


def test_the_word_before_an_opener_is_seen_across_chunks_and_spans():
    assert run(["re", "call:f{a:1}"], GEMMA)[0] == "recall:f{a:1}"
    assert run(["<|tool_call>x<tool_call|>", "call:f{a:1}"], GEMMA)[0] == ""


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("analysisWe need to answer. Simple.assistantfinalFour.", "Four."),
        ("analysisThe user asks", ""),
        ("analysis of the logs shows nothing", "analysis of the logs shows nothing"),
        (" analysisWe answer.assistantfinalfour", " analysisWe answer.assistantfinalfour"),
        ("My analysisWe keep.assistantfinal", "My analysisWe keep.assistantfinal"),
        ("analysis", "analysis"),
    ],
)
def test_a_start_opener_counts_only_at_the_answers_start(text: str, shown: str):
    assert every_chunking(text, RESIDUE) == {shown}


def reasoned_counts(chunks: list[str], registry: tuple[Pattern, ...]) -> tuple[str, str, int]:
    """What `chunks` show, the reasoning routed out of them, and the characters stripped."""
    shown, thought, f = reasoned(chunks, registry)
    return shown, thought, f.stripped_chars


@pytest.mark.parametrize(
    ("text", "shown", "reasoning"),
    [  # sglang test_harmony_parser.py; Augustas11/macprovider #743
        ("analysisWe need to answer.assistantfinalFour.", "Four.", "We need to answer."),
        ("analysisThe user asks", "", "The user asks"),
        ("assistantfinalFour.", "Four.", ""),
        ("It is assistantfinal here.", "It is assistantfinal here.", ""),
    ],
)  # fmt: skip
def test_residue_analysis_is_reasoning_and_only_its_header_words_are_stripped(
    text: str, shown: str, reasoning: str
):
    for chunks in [
        *(chunked(text, n) for n in (1, 3, len(text))),
        *(cut_at(text, i) for i in range(len(text))),
    ]:
        assert reasoned_counts(chunks, RESIDUE) == (
            shown,
            reasoning,
            len(text) - len(shown) - len(reasoning),
        ), chunks


@given(
    st.text(alphabet="analysisWe.ftA ", max_size=30).map(lambda t: t + "assistantfinal" + t),
    st.data(),
)
def test_residue_routes_alike_however_it_is_chunked(text: str, data: st.DataObject):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=4)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert reasoned_counts(pieces, RESIDUE) == reasoned_counts([text], RESIDUE)


def test_held_text_at_the_answers_start_keeps_its_place():
    f = ScaffoldingFilter(RESIDUE)
    assert f.feed("anal") == ""
    assert f.feed("ysis") == ""
    assert f.feed("We") == ""
    g = ScaffoldingFilter(RESIDUE)
    assert g.feed("anal") + g.feed("ysis ok") == "analysis ok"


# --- trailers ------------------------------------------------------------------------------

BARE = "<function=Read>\n<parameter=path>/a.md</parameter>\n</function>"


FAR = " " * (TRAILER_SPACE + 1)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"Reading.\n{BARE}\n</tool_call>", "Reading.\n"),
        (f"Reading.\n{BARE}</tool_call> Done.", "Reading.\n Done."),
        (f"{BARE}\n\nDone.", "\n\nDone."),
        (f"{BARE}\n</tool_c", "\n</tool_c"),
        (f"{BARE}{FAR}</tool_call>", f"{FAR}</tool_call>"),
        ("A lone </tool_call> stays.", "A lone </tool_call> stays."),
    ],
)
def test_a_trailer_is_stripped_only_right_after_its_span(text: str, shown: str):
    assert every_chunking(text, QWEN3_CODER) == {shown}


def test_a_trailer_that_starts_with_a_blank_is_refused():
    with pytest.raises(ValueError, match="a trailer starts with a blank"):
        Pattern("p", "span", "<p>", source="test", ends=("</p>",), trailers=("\n</x>",))


def test_a_trailer_counts_in_its_spans_characters_and_preview():
    text = f"{BARE}\n</tool_call>ok"
    out, f = run(chunked(text, 2), QWEN3_CODER)
    assert out == "ok"
    assert (f.stripped_chars, f.stripped_spans) == (len(text) - 2, 1)
    assert f.first_span == text[:-2][:PREVIEW_CHARS]


def test_blanks_after_a_span_are_held_while_a_trailer_may_follow():
    f = ScaffoldingFilter(QWEN3_CODER)
    assert f.feed(BARE + "\n ") == ""
    assert f.held == "\n "
    assert f.feed("x") == "\n x"


# --- braced bodies -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("call:f{a:{b:{c:1}}} after", " after"),
        ('call:f{s:<|"|>a } brace<|"|>} after', " after"),
        ("call:f{s:<escape>{{{<escape>} after", " after"),
        ("call:f{a:1", ""),
        ('call:f{s:<|"|>never closed}', ""),
    ],
)
def test_a_braced_body_ends_at_the_brace_closing_its_first_one(text: str, shown: str):
    assert every_chunking(text, GEMMA) == {shown}


def test_a_closing_brace_before_any_opening_one_is_body():
    registry = (Pattern("b", "braced", "@", source="test"),)
    assert every_chunking("x@a}b{c}d", registry) == {"xd"}


def test_a_braced_body_holds_a_split_quote():
    f = ScaffoldingFilter(GEMMA)
    assert f.feed("call:f{s:<|") == ""
    assert f.held == "<|"
    assert f.feed('"|>}<|"|>} x') == " x"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # Gemma 4: a string between <|"|> quotes is data, the end marker in it too
        ('a<|tool_call>call:w{t:<|"|>x <tool_call|> y<|"|>}<tool_call|>b', "ab"),
        ('a<|tool_call>call:w{t:<|"|><turn|><|"|>,n:2}<turn|>b', "ab"),
        ('a<|tool_call>call:f{}<tool_call|>b<|tool_call>call:g{s:<|"|>}<|"|>}<tool_call|>c', "abc"),
        # FunctionGemma: <escape> quotes
        (
            "a<start_function_call>call:w{t:<escape><end_function_call><escape>}"
            "<end_function_call>b",
            "ab",
        ),
        # a quote never closed: the call runs to the answer's end (G8)
        ('a<|tool_call>call:w{t:<|"|>x<tool_call|> b', "a"),
    ],
)
def test_a_span_end_marker_between_its_formats_quotes_is_data(text: str, shown: str):
    assert every_chunking(text, GEMMA) == {shown}


def test_a_span_holds_a_split_quote_and_reads_it_whole():
    f = ScaffoldingFilter(GEMMA)
    assert f.feed('a<|tool_call>call:w{t:<|"') == "a"
    assert f.held == '<|"'
    assert f.feed('|><tool_call|><|"|>}<tool_call|> b') == " b"


# --- the registry API ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"kind": "braced", "trailers": ("x",)},
            "only a span, a JSON value or a token has trailers",
        ),
        ({"kind": "token", "quotes": ("q",)}, "only a braced or a span body has quotes"),
        (
            {"kind": "span", "ends": ("e",), "quotes": ("q",), "json_strings": "always"},
            "a JSON body's quotes are its own",
        ),
        ({"kind": "span", "ends": ("<e|>",), "quotes": ("|",)}, "end '<e|>' and quote '|'"),
        ({"kind": "braced", "quotes": ("q{",)}, "a quote with a brace"),
        ({"kind": "braced", "quotes": ("q", "aqa")}, "quote 'q' is inside 'aqa'"),
        ({"kind": "span", "ends": ("e",), "trailers": ("",)}, "an empty trailer"),
    ],
)
def test_a_pattern_that_cannot_be_applied_is_refused(kwargs: dict[str, object], message: str):
    with pytest.raises(ValueError, match=message):
        Pattern("p", start="<p>", source="test", **kwargs)  # type: ignore[arg-type]


# --- the shape grammar ---------------------------------------------------------------------

SHAPES = [
    CALL_BODY,
    seq(NAME, Lit("{"), Chars("[A-Za-z_}]", 1, 1)),
    seq(SPACE, alt(Lit("["), Lit("{"), seq(NAME, alt(Lit("[ARGS]"), Lit("{"))))),
    Chars("[A-Z]", 1, 1),
]


@pytest.mark.parametrize("shape", SHAPES)
@given(data=st.data())
def test_every_prefix_of_a_match_is_viable(shape, data: st.DataObject):
    shape_regex = compiled(shape)
    text = data.draw(st.from_regex(shape_regex.full, fullmatch=True))
    assert len(text) <= max_len(shape) == shape_regex.longest
    for k in range(len(text) + 1):
        assert shape_regex.viable.fullmatch(text[:k]), text[:k]


@pytest.mark.parametrize("shape", SHAPES)
@given(text=st.text("ab{}[<_A \n:", max_size=12))
def test_a_viable_text_that_fits_no_longer_is_never_a_match(shape, text: str):
    shape_regex = compiled(shape)
    if not shape_regex.viable.fullmatch(text):
        assert not any(shape_regex.full.fullmatch(text + more) for more in ("", "{", "a{b", "<"))


def test_a_chars_part_needs_a_positive_bound():
    with pytest.raises(ValueError, match="most > 0"):
        Chars("[a]", 0, 0)
    with pytest.raises(re.error):
        Chars("[a", 1, 1)


# --- bodies read as JSON, and a call cut off at the end ------------------------------------


def test_a_raw_body_in_a_json_aware_span_is_not_read_as_json():
    """`<tool_call>` reads its body as JSON only when it begins with `{` or `[`: Qwen3-Coder's
    XML body holds raw code, whose unbalanced brace and quote must not hide the end."""
    text = (
        '<tool_call>\n<function=run>\n<parameter=code>\nprint("{)\n</parameter>\n</function>'
        "\n</tool_call>after"
    )
    assert every_chunking(text, QWEN3_CODER) == {"after"}


def test_a_json_string_that_never_closes_strips_to_the_end():
    text = 'a<tool_call>{"name": "f", "arguments": {"s": "</tool_call> b'
    assert every_chunking(text, QWEN3_CODER) == {"a"}


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("I will check.\n<tool_call>\n", "I will check.\n"),
        ("<tool_call>", ""),
        ("The opening tag is <tool_call>", "The opening tag is <tool_call>"),
        ("I will check.\n<tool_call> soon", "I will check.\n<tool_call> soon"),
        # ollama's qwen3coder tests: an opener glued to the sentence before it is a call
        ("Let me look that up for you.<tool_call>", "Let me look that up for you."),
        # ollama's glm46 tests: cut off in the function's name
        ("Let me search.\n<tool_call>gr", "Let me search.\n"),
        # Qwen3.5 without its wrapper (ollama PR #17742), cut after the name
        ("I'll read the config first.\n<function=read_file>", "I'll read the config first.\n"),
        ("The tag is <tool_call>gr", "The tag is <tool_call>gr"),
    ],
)
def test_an_opener_the_end_cut_short_is_a_call_at_a_line_or_sentence_end_and_prose_mid_line(
    text: str, shown: str
):
    assert every_chunking(text, QWEN3_CODER) == {shown}


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("I'll look that up.\n[TOOL_CALLS]get_weather", "I'll look that up.\n"),
        ("[TOOL_CALLS]toolname_no_args", ""),  # vllm's mistral tool parser tests
        ("The token is [TOOL_CALLS]get_weather", "The token is [TOOL_CALLS]get_weather"),
    ],
)
def test_a_mistral_call_the_end_cut_after_its_name_is_stripped(text: str, shown: str):
    assert every_chunking(text, registry_with("mistral")) == {shown}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "token", "json_strings": "always"}, "json_strings is for a span's body"),
        ({"kind": "span", "ends": ("e",), "skips": ("[A]",)}, "only a json_value body has skips"),
        ({"kind": "json_value", "skips": ("[A]", "[A]x")}, "skip '\\[A\\]' is inside"),
    ],
)
def test_a_json_body_pattern_is_checked_when_made(fields: dict[str, Any], message: str):
    with pytest.raises(ValueError, match=message):
        Pattern("p", start="<p>", source="test", **fields)


def test_an_inner_opener_walled_off_in_a_longer_ones_prefix_does_not_release_that_prefix():
    """Regression (found by the 1,000-run fuzz): `a`, a word-start token, matched inside
    the tail `<|tool_ca`; the text before it was shown, though `<|tool_calls|>` could still
    follow and be stripped."""
    registry = (*registry_with(), Pattern("a", "token", "a", boundary="word", source="test"))
    assert every_chunking("<|tool_calls|> x", registry) == {" x"}
    f = ScaffoldingFilter(registry)
    assert (f.feed("<|tool_ca"), f.held) == ("", "<|tool_ca")


def test_a_json_body_holds_an_end_marker_cut_after_a_json_character_it_holds():
    """Regression: a JSON body's closer `<\\_e>` cut after its backslash (a JSON character,
    read as a token) released `<\\`, so the closer never matched and the span took the
    answer after it."""
    registry = (Pattern("p", "span", "<s>", ends=("<\\_e>",), json_strings="always", source="t"),)
    assert every_chunking('a<s>{"k": "<\\\\_e>"}<\\_e>b', registry) == {"ab"}
    f = ScaffoldingFilter(registry)
    assert (f.feed("a<s>{}<\\"), f.held) == ("a", "<\\")


def test_a_json_string_holds_nothing_back_though_it_quotes_an_end_markers_start():
    """Inside a JSON string no marker ends the span, so its tail is not held back."""
    registry = (Pattern("p", "span", "<s>", ends=("<e>",), json_strings="always", source="t"),)
    f = ScaffoldingFilter(registry)
    assert (f.feed('<s>{"k": "<'), f.held) == ("", "")
    assert f.feed('e>"}<e>ok') + f.flush() == "ok"
