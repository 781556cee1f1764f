"""mock_llm.flows.flow_writer: any flow written as a flow file reads back as the same flow."""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mock_llm import builtin_flows
from mock_llm.flows.families import FAMILY_NAMES
from mock_llm.flows.flow_file import FlowFileError, load_flow_file, parse_flows
from mock_llm.flows.flow_writer import dump_flows
from mock_llm.flows.model import (
    Chunking,
    CutFault,
    ErrorEventFault,
    Expect,
    Extract,
    Flow,
    HttpFault,
    MalformedFault,
    RecordedChunk,
    StallFault,
    Step,
    ToolCall,
)

MARKUP = [
    "<|tool_call_start|>",
    "<|tool_call_end|>",
    "[read(path='/a.md')]",
    "\n",
    "\r\n",
    "\r",
    "\x85",
    "\u2028",
    "\u2029",
    "\ufeff",
    "\t",
    " ",
    "  ",
    "#",
    ": ",
    "- ",
    "'",
    '"',
    "\\",
    "{",
    "}",
    "&a",
    "*a",
    "!tag",
    "%",
    "@",
    "`",
    "|",
    ">",
    "null",
    "true",
    "1.5",
    "0x1F",
    "~",
    "---",
    "...",
    "\x00",
    "\x7f",
    "\U0001f600",
    "é",
    "\ufffe",
]
# any text, weighted toward what YAML treats specially; no lone surrogates (never in a flow)
TEXT = st.lists(
    st.one_of(st.sampled_from(MARKUP), st.text(st.characters(blacklist_categories=("Cs",)))),
    max_size=6,
).map("".join)
NUMBER = st.floats(0, 1e6, allow_nan=False, allow_infinity=False)
COUNT = st.integers(0, 10_000)


def round_trip(flows: list[Flow]) -> dict[str, Flow]:
    return parse_flows(dump_flows(flows, "a comment\nover two lines"), "written.yaml")


def same(flow: Flow, back: Flow) -> bool:
    return replace(back, source=flow.source) == flow


def test_every_built_in_flow_round_trips():
    flows = builtin_flows()
    back = round_trip(list(flows.values()))
    assert list(back) == list(flows)
    assert all(same(flows[name], back[name]) for name in flows)


@st.composite
def recorded_steps(draw: st.DrawFn) -> Step:
    parts = draw(st.lists(st.sampled_from(["reasoning", "content"]), max_size=5))
    parts.sort(key=["reasoning", "content"].index)
    chunks = [RecordedChunk(p, draw(TEXT), None, draw(NUMBER)) for p in parts]  # type: ignore[arg-type]
    calls: list[ToolCall] = []
    for index in range(draw(st.integers(0, 2))):
        pieces = draw(st.lists(TEXT, min_size=1, max_size=3))
        chunks += [RecordedChunk("call", t, index, draw(NUMBER)) for t in pieces]
        calls.append(ToolCall(draw(TEXT), "".join(pieces), draw(st.none() | TEXT)))
    if not chunks:
        chunks.append(RecordedChunk("content", draw(TEXT), None, draw(NUMBER)))
    return Step(
        content="".join(c.text for c in chunks if c.part == "content"),
        reasoning="".join(c.text for c in chunks if c.part == "reasoning"),
        tool_calls=tuple(calls),
        finish_reason=draw(st.sampled_from([None, "stop", "length", "tool_calls"])),
        reasoning_field=draw(st.sampled_from([None, "reasoning", "both"])),
        fault=draw(st.none() | FAULTS),
        recorded=tuple(chunks),
    )


FAULTS = st.one_of(
    st.builds(
        HttpFault,
        st.integers(400, 599),
        TEXT,
        TEXT,
        st.none() | TEXT,
        st.none() | NUMBER,
    ),
    st.builds(CutFault, COUNT, st.sampled_from(["abort", "eof"])),
    st.builds(StallFault, COUNT, NUMBER),
    st.builds(MalformedFault, COUNT, TEXT.map(lambda t: " ".join(t.splitlines()))),
    st.builds(ErrorEventFault, COUNT, TEXT, TEXT, st.none() | TEXT),
)
AUTHORED = st.builds(
    Step,
    content=TEXT,
    reasoning=TEXT,
    tool_calls=st.lists(st.builds(ToolCall, TEXT, TEXT, st.none() | TEXT), max_size=2).map(tuple),
    finish_reason=st.sampled_from([None, "stop", "content_filter"]),
    chunking=st.one_of(
        st.sampled_from([Chunking("whole"), Chunking("char"), Chunking("word")]),
        st.integers(1, 99).map(lambda n: Chunking("size", n)),
    ),
    delay_ms=NUMBER,
    ttft_ms=NUMBER,
    reasoning_field=st.sampled_from([None, "reasoning_content"]),
    fault=st.none() | FAULTS,
    extract=st.none()
    | st.builds(
        Extract,
        st.integers(1, 10),
        TEXT,
        TEXT,
        st.none() | TEXT.filter(lambda t: bool(t.strip())),
    ),
)
EXPECTS = st.builds(
    Expect, TEXT, st.just(True), COUNT, st.sampled_from([None, "malformed"]), st.integers(2, 9)
)
FLOWS = st.builds(
    Flow,
    name=st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True),
    description=TEXT,
    steps=st.lists(recorded_steps() | AUTHORED, min_size=1, max_size=3).map(tuple),
    canary=st.none() | TEXT,
    source=st.just("written.yaml"),
    expect=st.none() | EXPECTS,
).flatmap(
    lambda flow: (
        st.just(flow)
        if flow.expect is None
        else st.builds(
            lambda family, elsewhere, named: replace(
                flow,
                family=family,
                elsewhere=elsewhere if family else None,
                written_by=tuple(w for w, _ in named[:1] if w != family) if family else (),
                by_family=tuple(o for o in named[1:] if o[0] != family) if family else (),
            ),
            st.none() | st.sampled_from(FAMILY_NAMES),
            st.none() | EXPECTS,
            st.lists(
                st.tuples(st.sampled_from(FAMILY_NAMES), EXPECTS),
                max_size=3,
                unique_by=lambda named: named[0],
            ),
        )
    )
)


@settings(max_examples=max(1, settings().max_examples // 4))
@given(st.lists(FLOWS, min_size=1, max_size=3, unique_by=lambda f: f.name))
def test_any_flow_round_trips_exactly(flows: list[Flow]):
    """A quarter of the profile's examples: each writes up to three flows of up to three
    steps as a file and reads it back, the work of dozens of a plain property's examples."""
    flows = [
        replace(flow, steps=tuple(replace(s, content="") if s.extract else s for s in flow.steps))
        for flow in flows
    ]
    back = round_trip(flows)
    assert list(back) == [flow.name for flow in flows]
    for flow in flows:
        assert back[flow.name] == flow


def test_recorded_chunks_are_one_line_each_and_multiline_text_a_block():
    step = Step(
        content="line one\nline two",
        recorded=(
            RecordedChunk("content", "line one\n", None, 12.5),
            RecordedChunk("content", "line two", None, 0.0),
        ),
    )
    text = dump_flows([Flow("f", "", (step,))])
    assert "content: |-\n        line one\n        line two\n" in text
    assert '- {content: "line one\\n", after_ms: 12.5}\n' in text
    assert "- {content: line two}\n" in text


def test_a_line_break_yaml_would_misread_is_always_an_escape():
    text = dump_flows([Flow("f", "", (Step(content="a\u2028b\nc\x85d"),))])
    assert '"a\\Lb\\nc\\Nd"' in text
    assert parse_flows(text, "x")["f"].steps[0].content == "a\u2028b\nc\x85d"


def test_a_gz_flow_file_is_read_compressed(tmp_path: Path):
    path = tmp_path / "rec.yaml.gz"
    path.write_bytes(gzip.compress(dump_flows([Flow("f", "", (Step(content="hi"),))]).encode()))
    assert load_flow_file(path)["f"].steps[0].content == "hi"
    (tmp_path / "bad.gz").write_bytes(b"not gzip")
    with pytest.raises(FlowFileError, match="cannot read the file"):
        load_flow_file(tmp_path / "bad.gz")
