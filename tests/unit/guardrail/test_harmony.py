"""gpt-oss's harmony messages in answer text: routed to the answer, the reasoning, or away.

Each completion below is copied from a public source (docs/research/harmony.md): openai/harmony
(docs/format.md, src/tests.rs, tests/test_harmony.py), llama.cpp tests/test-chat.cpp's
GPT-OSS block, SGLang's harmony parser tests, vLLM's, and the leak reports named beside them.
Every one is replayed whole, at 1 and 7 characters, and cut at every offset, through the
reader alone and through the filter `auto` gives a gpt-oss name.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guardrail import registry_for
from guardrail.harmony import HEADER_LIMIT, HarmonyReader, route_of
from guardrail.scaffolding import ScaffoldingFilter

from ..helpers.scaffolding import reasoned


@dataclass(frozen=True)
class Read:
    answer: str
    reasoning: str
    stripped: str
    messages: int  # stripped messages (and stray tokens), each closed once


def read(chunks: list[str]) -> Read:
    reader = HarmonyReader()
    pieces = [piece for chunk in chunks for piece in reader.feed(chunk)] + reader.flush()
    text = {"answer": "", "reasoning": "", "stripped": ""}
    for route, piece in pieces:
        if route != "closed":
            text[route] += piece
    closed = sum(1 for route, _ in pieces if route == "closed")
    return Read(text["answer"], text["reasoning"], text["stripped"], closed)


def chunkings(text: str) -> list[list[str]]:
    """Whole, 1 and 7 characters at a time, and cut once at every offset."""
    cuts = [[text], list(text), [text[i : i + 7] for i in range(0, len(text), 7)]]
    return cuts + [[text[:i], text[i:]] for i in range(1, len(text))]


HARMONY = [
    pytest.param(  # harmony docs/format.md, reasoning then final
        '<|channel|>analysis<|message|>User asks: "What is 2 + 2?" Simple arithmetic.<|end|>'
        "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>",
        "2 + 2 = 4.",
        'User asks: "What is 2 + 2?" Simple arithmetic.',
        id="analysis-then-final",
    ),
    pytest.param(  # harmony docs/format.md, a function call on the commentary channel
        "<|channel|>analysis<|message|>Need to use function get_weather.<|end|><|start|>assistant"
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
        '{"location":"San Francisco"}<|call|>',
        "",
        "Need to use function get_weather.",
        id="analysis-then-call",
    ),
    pytest.param(  # harmony src/tests.rs test_tool_call_with_constrain_marker_adjacent
        "<|start|>assistant to=functions.get_weather<|channel|>commentary<|constrain|>json"
        '<|message|>{"location": "Tokyo"}<|end|>',
        "",
        "",
        id="recipient-in-role-header",
    ),
    pytest.param(  # harmony tests/test_harmony.py test_tool_call_with_constrain_tokenized_correctly
        "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json"
        '<|message|>{"location": "Tokyo"}<|call|>',
        "",
        "",
        id="canonical-render",
    ),
    pytest.param(  # llama.cpp test-chat.cpp: the reply begins with its recipient
        ' to=functions.special_function<|channel|>analysis <|constrain|>json<|message|>{"arg1": 1}',
        "",
        "",
        id="reply-begins-with-recipient",
    ),
    pytest.param(  # llama.cpp test-chat.cpp: recipient in the channel header, no stop token
        '<|channel|>commentary to=functions.special_function<|message|>{"arg1": 1}',
        "",
        "",
        id="call-cut-at-its-stop-token",
    ),
    pytest.param(  # harmony test_streamable_parser_missing_message_token_tool_call
        "... Let's use the tool.<|end|><|start|>assistant to=functions.get_weather<|channel|>"
        'commentary json<|message|>{"location": "Tokyo"}<|call|>',
        "... Let's use the tool.",
        "",
        id="content-type-without-constrain",
    ),
    pytest.param(  # llama.cpp test-chat.cpp: a preamble is content
        "<|channel|>commentary<|message|>Hello, world!\nWhat's up?",
        "Hello, world!\nWhat's up?",
        "",
        id="preamble-shown",
    ),
    pytest.param(  # llama.cpp test-chat.cpp: preamble, then a call
        "<|channel|>analysis<|message|>Plan.<|end|><|start|>assistant<|channel|>commentary"
        "<|message|>Checking the notes.<|end|><|start|>assistant<|channel|>commentary"
        ' to=functions.special_function <|constrain|>json<|message|>{"arg1": 1}',
        "Checking the notes.",
        "Plan.",
        id="preamble-then-call",
    ),
    pytest.param(  # llama.cpp gpt-oss.cpp: gpt-oss-20b's stray commentary header
        "<|channel|>commentary to=assistant<|channel|>analysis<|message|>I'm\nthinking<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Hello, world!",
        "Hello, world!",
        "I'm\nthinking",
        id="stray-header-to-assistant",
    ),
    pytest.param(  # llama.cpp with reasoning_format=none; PR #15181
        "<|channel|>analysis<|message|>I'm\nthinking<|end|>Hello, world!\nWhat's up?",
        "Hello, world!\nWhat's up?",
        "I'm\nthinking",
        id="final-header-already-removed",
    ),
    pytest.param(  # llama.cpp test-chat.cpp: structured output on the final channel
        "<|channel|>analysis<|message|>I need to output JSON<|end|><|start|>assistant"
        '<|channel|>final <|constrain|>json<|message|>{"amount": 123.45}',
        '{"amount": 123.45}',
        "I need to output JSON",
        id="constrained-final-is-the-answer",
    ),
    pytest.param(  # harmony test_missing_message_token_requires_non_strict_mode
        "<|channel|>analysis I must refuse<|end|><|start|>assistant<|channel|>final<|message|>"
        "I can't help with that.<|return|>",
        "I can't help with that.",
        "I must refuse",
        id="header-without-message-token",
    ),
    pytest.param(  # llama.cpp test-chat.cpp: an unsolicited built-in call
        "<|channel|>analysis<|message|>Run it.<|end|><|start|>assistant<|channel|>commentary"
        ' to=python <|constrain|>code<|message|>print("hello")',
        "",
        "Run it.",
        id="built-in-call",
    ),
    pytest.param(  # SGLang test_harmony_parser.py: built-in on the analysis channel
        '<|channel|>analysis to=browser.search<|message|>{"query": "SGLang"}<|call|>',
        "",
        "",
        id="browser-call-on-analysis",
    ),
    pytest.param(  # SGLang: two messages with no <|start|> between them
        "<|channel|>analysis<|message|>first reasoning<|end|><|channel|>analysis<|message|>"
        "second reasoning<|end|><|channel|>final<|message|>Done.",
        "Done.",
        "first reasoningsecond reasoning",
        id="no-start-between-messages",
    ),
    pytest.param(  # TensorRT-LLM #9256: commentary whose recipient was dropped, args as body
        '<|channel|>commentary<|message|>{\n  "path": "/",\n  "name_pattern": "*Chen*"\n}<|end|>',
        "",
        "",
        id="dropped-recipient-json-preamble",
    ),
    pytest.param(  # the same, a list of argument objects
        '<|channel|>commentary<|message|>[{"path": "/"}]<|end|>',
        "",
        "",
        id="dropped-recipient-json-list-preamble",
    ),
    pytest.param(  # openai/harmony docs/format.md: a preamble for the user that opens with `[`
        "<|channel|>analysis<|message|>Tell the user first.<|end|><|start|>assistant"
        "<|channel|>commentary<|message|>[Update] Fetching the numbers.<|end|><|start|>assistant"
        "<|channel|>final<|message|>Revenue grew 12%.<|return|>",
        "[Update] Fetching the numbers.Revenue grew 12%.",
        "Tell the user first.",
        id="bracketed-preamble-shown",
    ),
    pytest.param(  # odysseus #4522
        "Searching. <|channel|>commentary to=functions.web_search<|message|>{...}<|call|>",
        "Searching. ",
        "",
        id="call-after-prose",
    ),
    pytest.param(  # llama.cpp #27720: garbage after <|channel|>, then the real message
        "<|channel|>commentary?commentary?<|end|><|start|>assistant<|channel|>analysis<|message|>"
        "ok<|end|><|start|>assistant<|channel|>final<|message|>Answer.",
        "Answer.",
        "ok",
        id="malformed-channel-stripped",
    ),
    pytest.param(  # a tool reply the model made up (its role is the tool's)
        "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"
        '{"sunny": true}<|end|><|start|>assistant<|channel|>final<|message|>It is sunny.',
        "It is sunny.",
        "",
        id="made-up-tool-reply-stripped",
    ),
    pytest.param(  # issue 40: a token quoted in an argument is data, not the call's end
        "<|start|>assistant<|channel|>commentary to=functions.f<|message|>"
        '{"text": "a <|call|> b \\" <|end|>"}<|call|>after',
        "after",
        "",
        id="token-quoted-in-an-argument",
    ),
]


@pytest.mark.parametrize(("text", "answer", "reasoning"), HARMONY)
def test_a_harmony_completion_is_routed_alike_at_every_chunking(
    text: str, answer: str, reasoning: str
):
    for chunks in chunkings(text):
        got = read(chunks)
        assert (got.answer, got.reasoning) == (answer, reasoning), chunks
        assert len(got.answer) + len(got.reasoning) + len(got.stripped) == len(text), chunks


@pytest.mark.parametrize(("text", "answer", "reasoning"), HARMONY)
def test_the_gpt_oss_filter_shows_the_answer_and_hands_over_the_reasoning(
    text: str, answer: str, reasoning: str
):
    for chunks in chunkings(text)[:3]:
        shown, thought, f = reasoned(chunks, registry_for("gpt-oss-20b"))
        assert (shown, thought) == (answer, reasoning), chunks
        assert f.stripped_chars == len(text) - len(answer) - len(reasoning)
        assert f.first_span.startswith(("<|", " to="))  # the first message's markup


def test_every_stripped_message_is_counted_once_and_previewed():
    f = ScaffoldingFilter(registry_for("gpt-oss"))
    text = str(HARMONY[1].values[0])
    assert f.feed(text) + f.flush() == ""
    assert f.stripped_spans == 2  # the analysis message's markup, and the call
    assert f.first_span == "<|channel|>analysis<|message|><|end|>"


@pytest.mark.parametrize(
    "text",
    [
        "to=x is where the prose starts",
        " to=functions.f but no channel follows",
        "Use `to=functions.read` in the header.",
        "a < b, and <|not a token|> either",
    ],
)
def test_prose_that_only_looks_like_harmony_is_the_answer(text: str):
    for chunks in chunkings(text):
        assert read(chunks) == Read(text, "", "", 0), chunks


def test_a_header_that_never_ends_is_resolved_at_its_limit_so_the_stream_goes_on():
    reader = HarmonyReader()
    out = reader.feed("<|channel|>analysis " + "x" * HEADER_LIMIT)
    assert ("reasoning", "x" * HEADER_LIMIT) in out
    assert reader.feed("more") == [("reasoning", "more")]


@pytest.mark.parametrize(
    ("header", "route"),
    [
        ("<|channel|>analysis<|message|>", "reasoning"),
        ("<|start|>assistant<|channel|>final<|message|>", "answer"),
        ("<|start|>assistant<|channel|>commentary<|message|>", "preamble"),
        ("<|channel|>commentary to=functions.f json<|message|>", "call"),
        ("<|start|>assistant to=functions.f<|channel|>analysis<|message|>", "call"),
        ("<|channel|>commentary to=assistant<|channel|>final<|message|>", "answer"),
        ("<|start|>functions.f to=assistant<|channel|>commentary<|message|>", "call"),
        ("<|channel|>??<|message|>", "call"),
        ("<|start|>assistant<|message|>", "answer"),
    ],
)
def test_a_header_routes_its_body(header: str, route: str):
    assert route_of(header) == route


PIECES = ("<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>", "<|constrain|>",
          "<|return|>", "assistant", "analysis", "final", "commentary", " to=functions.f",
          " to=assistant", " json", '{"a": "', '"}', "\\", "x", " ", "\n", "<", "|",
          "<|")  # fmt: skip
"""What harmony text is made of, cut small so that tokens meet, split and nest."""
harmony_text = st.lists(st.sampled_from(PIECES)).map("".join)


@given(harmony_text, st.lists(st.integers(1, 40), min_size=1, max_size=8))
def test_any_chunking_routes_every_character_once_and_alike(text: str, sizes: list[int]):
    chunks, pos, turn = [], 0, 0
    while pos < len(text):
        size = sizes[turn % len(sizes)]
        chunks.append(text[pos : pos + size])
        pos, turn = pos + size, turn + 1
    whole, cut = read([text]), read(chunks)
    assert cut == whole
    assert len(whole.answer) + len(whole.reasoning) + len(whole.stripped) == len(text)


@given(st.text(st.characters(blacklist_characters="|")))
def test_text_with_no_token_bar_is_all_answer(text: str):
    assert read(list(text)) == Read(text, "", "", 0)


@given(st.integers(0, 2 * HEADER_LIMIT), st.lists(st.integers(1, 300), min_size=1, max_size=4))
def test_a_header_past_its_limit_is_cut_at_the_same_character_at_any_chunking(
    pad: int, sizes: list[int]
):
    text = f"<|channel|>analysis {'x' * pad} to=functions.f<|message|>{{}}<|call|>after"
    chunks, pos, turn = [], 0, 0
    while pos < len(text):
        chunks.append(text[pos : pos + sizes[turn % len(sizes)]])
        pos, turn = pos + sizes[turn % len(sizes)], turn + 1
    assert read(chunks) == read([text])
