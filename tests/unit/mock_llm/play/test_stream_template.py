"""Streams served from templates are the reference's plans, byte for byte, pause for pause.

The reference is `response_plan.plan_response`; `stream_template` must give the same plan
(status, headers, every action: the same bytes in the same writes, the same pauses, the
same faults, the same chunk counts, the same ending) for every step, wire format, request
shape and completion meta, and its store must stay bounded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mock_llm.flows.catalog import builtin_flows
from mock_llm.flows.chunking import NO_PACING, REAL_PACING
from mock_llm.flows.flow_file import load_flow_file
from mock_llm.flows.model import (
    REASONING_FIELDS,
    Chunking,
    CutFault,
    ErrorEventFault,
    FinishReason,
    HttpFault,
    MalformedFault,
    ReasoningField,
    RecordedChunk,
    StallFault,
    Step,
    ToolCall,
)
from mock_llm.play import stream_template
from mock_llm.play.response_plan import (
    Api,
    Pause,
    RequestShape,
    ResponsePlan,
    Send,
    plan_response,
)
from mock_llm.play.stream_template import StreamTemplates
from mock_llm.wire import openai as openai_wire

from ....support.cases import check_each

Format = Api | Literal["gemini-json-array"]
"""A wire format: an API, or Gemini's stream framing without `alt=sse` (one JSON array)."""
APIS: tuple[Format, ...] = (*get_args(Api), "gemini-json-array")
FIXTURE_FLOWS = Path(__file__).resolve().parents[3] / "fixtures" / "flows.yaml"
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You answer from the notes."},
    {"role": "user", "content": "when do backups run?"},
]
METAS = (
    openai_wire.CompletionMeta("chatcmpl-mock7", 1_700_000_000, "lfm2-test"),
    openai_wire.CompletionMeta("chatcmpl-mock123456", 5, "gpt-4o-mini"),
    openai_wire.CompletionMeta('chatcmpl-é"\\\ud800x', 0, 'mödel "quoted" \\ \n \ud800'),
)


def every_flow_step() -> list[tuple[str, int, Step]]:
    flows = {**builtin_flows(), **load_flow_file(FIXTURE_FLOWS)}
    return [
        (name, index, step)
        for name, flow in sorted(flows.items())
        for index, step in enumerate(flow.steps)
    ]


FLOW_STEPS = every_flow_step()


def shape(
    api: Format, include_usage: bool, messages: list[dict[str, Any]] = MESSAGES
) -> RequestShape:
    if api == "gemini-json-array":
        return RequestShape(True, include_usage, messages, ("read", "grep"), "gemini", True)
    return RequestShape(True, include_usage, messages, ("read", "grep"), api)


def served(
    store: StreamTemplates,
    step: Step,
    meta: openai_wire.CompletionMeta,
    field: ReasoningField,
    request: RequestShape,
    pacing: float = REAL_PACING,
) -> ResponsePlan:
    return store.plan(step, meta, field, request, pacing, admit_at_once=True)


def timeline(plan: ResponsePlan) -> list[tuple[str, object]]:
    """A plan as its timing reads: writes (chunk counts), pauses (seconds), faults."""
    out: list[tuple[str, object]] = []
    for action in plan.actions:
        if isinstance(action, Send):
            out.append(("send", action.chunks))
        elif isinstance(action, Pause):
            out.append(("pause", action.seconds))
        else:
            out.append(("fault", action.description))
    return out


@pytest.mark.sweep
def test_every_flow_step_streams_byte_identical_from_its_template_in_every_format():
    """Each step of the built-in and fixture flows, in each format, served from its
    template for each meta, with usage and the step's own reasoning field. Other fields,
    usage off, and any step, meta and prompt: `test_any_stream_from_a_template_is_the_
    reference_plan` below."""

    def check(case: tuple[Step, Format]) -> None:
        step, api = case
        store, request = StreamTemplates(), shape(api, include_usage=True)
        field = step.reasoning_field or "reasoning_content"
        for meta in METAS:
            assert served(store, step, meta, field, request) == plan_response(
                step, meta, field, request
            )
        if step.extract is None:  # every other step really is served from its template
            assert (store.refused, store.hits) == (0, len(METAS))

    cases: list[tuple[str, tuple[Step, Format]]] = [
        (f"{flow}-{index + 1}-{api}", (step, api))
        for flow, index, step in FLOW_STEPS
        for api in APIS
    ]
    assert check_each(cases, check) == len(FLOW_STEPS) * len(APIS)


def test_the_built_in_and_fixture_flows_are_all_covered():
    names = {name for name, _, _ in FLOW_STEPS}
    assert {"default", "slow", "stall", "cut-eof", "error-event", "malformed-sse"} <= names
    assert {"quick-stall", "three-steps", "markdown"} <= names


def test_a_template_serves_many_requests_each_with_its_own_meta():
    step = Step(content="abcdef" * 40, reasoning="think", chunking=Chunking("char"))
    store = StreamTemplates()
    request = shape("openai", include_usage=True)
    for seq in range(50):
        meta = openai_wire.CompletionMeta(
            f"chatcmpl-mock{seq}", 1_700_000_000 + seq, f"model-{seq}"
        )
        plan = store.plan(step, meta, "reasoning_content", request)
        assert plan == plan_response(step, meta, "reasoning_content", request)
    assert len(store) == 1
    assert store.hits == 49  # the first request is the reference's; the second builds it


def test_a_key_is_templated_on_its_second_request_only():
    step = Step(content="one two three")
    store = StreamTemplates()
    request = shape("ollama", include_usage=False)
    store.plan(step, METAS[0], "reasoning_content", request)
    assert (len(store), store.hits) == (0, 0)
    store.plan(step, METAS[1], "reasoning_content", request)
    assert (len(store), store.hits) == (1, 1)
    store.plan(step, METAS[2], "reasoning_content", request)
    assert (len(store), store.hits) == (1, 2)


@pytest.mark.parametrize("api", APIS)
def test_text_holding_a_marker_is_refused_and_served_by_the_reference(api: Format):
    for text in (stream_template.SUFFIX_MARK, stream_template.MODEL_MARK, "4000000017"):
        step = Step(content=f"a {text} b", reasoning=text, tool_calls=(ToolCall("read", text),))
        store = StreamTemplates()
        request = shape(api, include_usage=True)
        for meta in METAS:
            assert served(store, step, meta, "reasoning_content", request) == plan_response(
                step, meta, "reasoning_content", request
            )
        assert store.refused == 1
        assert store.hits == 0


@pytest.mark.parametrize("api", APIS)
def test_text_holding_the_meta_itself_stays_text(api: Format):
    meta = METAS[0]
    text = f"{meta.id} {meta.model} {meta.created} chatcmpl-mock7 lfm2-test"
    step = Step(content=text, reasoning=text, tool_calls=(ToolCall("read", text, id=meta.id),))
    store = StreamTemplates()
    request = shape(api, include_usage=True)
    for other in (meta, *METAS):
        assert served(store, step, other, "both", request) == plan_response(
            step, other, "both", request
        )
    assert store.hits == len(METAS) + 1


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    "step",
    [
        Step(content="a b c d", delay_ms=15, ttft_ms=40),
        Step(content="a b c d", reasoning="r s", delay_ms=5, fault=StallFault(2, 0.25)),
        Step(content="a b c d", delay_ms=5, fault=CutFault(3, "eof")),
        Step(content="a b c d", fault=CutFault(2, "abort")),
        Step(content="a b c d", ttft_ms=30, fault=MalformedFault(1)),
        Step(content="a b c d", delay_ms=1, fault=ErrorEventFault(2, "boom", code="x")),
        Step(content="a b", ttft_ms=200, fault=HttpFault(429, "slow down", "rate", None, 2)),
        Step(
            content="ab",
            reasoning="cd",
            tool_calls=(ToolCall("read", '{"path": "/a"}'),),
            recorded=(
                RecordedChunk("reasoning", "cd", after_ms=30),
                RecordedChunk("content", "a", after_ms=4),
                RecordedChunk("content", "b", after_ms=0),
                RecordedChunk("call", "", call=0, after_ms=7),
                RecordedChunk("call", '{"path": "/a"}', call=0, after_ms=2),
            ),
        ),
    ],
    ids=["paced", "stall", "cut-eof", "cut-abort", "malformed", "error-event", "http", "recorded"],
)
def test_paced_and_faulted_streams_keep_their_exact_timing(step: Step, api: Format):
    store = StreamTemplates()
    for pacing in (REAL_PACING, NO_PACING, 2.5):
        for meta in METAS:
            request = shape(api, include_usage=True)
            reference = plan_response(step, meta, "reasoning_content", request, pacing)
            plan = served(store, step, meta, "reasoning_content", request, pacing)
            assert timeline(plan) == timeline(reference)
            assert plan == reference
    assert store.refused == 0


def test_a_paced_stream_pauses_before_each_frame_as_the_step_says():
    step = Step(content="a b c", delay_ms=15, ttft_ms=40, fault=StallFault(2, 0.25))
    request = shape("openai", include_usage=False)
    store = StreamTemplates()
    plans = [served(store, step, meta, "reasoning_content", request) for meta in METAS]
    assert timeline(plans[-1]) == [
        ("pause", 0.04),
        ("send", 1),  # role
        ("pause", 0.015),
        ("send", 1),  # "a"
        ("fault", "stall 0.25s after 2 chunks"),
        ("pause", 0.25),
        ("pause", 0.015),
        ("send", 1),  # " b"
        ("pause", 0.015),
        ("send", 2),  # " c" and the finish chunk, with [DONE], in one write
    ]
    assert store.hits == len(METAS)


def test_an_unpaced_stream_is_one_write():
    step = Step(content="x" * 300, chunking=Chunking("char"))
    plan = served(StreamTemplates(), step, METAS[0], "reasoning_content", shape("openai", False))
    [send] = plan.actions
    assert isinstance(send, Send)
    assert send.chunks == 302  # role, 300 deltas, finish
    assert send.data.count(b"data: ") == 303  # and [DONE]


def test_the_key_tells_apart_everything_the_bytes_depend_on():
    store = StreamTemplates()
    step = Step(content="hello world", reasoning="hm")
    variants: list[tuple[Step, ReasoningField, RequestShape, float]] = [
        (step, "reasoning_content", shape("openai", False), REAL_PACING),
        (step, "reasoning", shape("openai", False), REAL_PACING),
        (step, "both", shape("openai", True), REAL_PACING),
        (step, "both", shape("openai", True, [{"role": "user", "content": "x" * 400}]), 1.0),
        (step, "both", shape("ollama", False), REAL_PACING),
        (step, "both", shape("responses", False), REAL_PACING),
        (step, "both", shape("gemini", False), REAL_PACING),
        (step, "both", shape("gemini-json-array", False), REAL_PACING),
        (Step(content="hello world!", reasoning="hm"), "both", shape("ollama", False), 1.0),
        (
            Step(content="hello world", reasoning="hm", delay_ms=3),
            "both",
            shape("ollama", False),
            1,
        ),
    ]
    for _ in range(2):
        for s, field, request, pacing in variants:
            assert served(store, s, METAS[0], field, request, pacing) == plan_response(
                s, METAS[0], field, request, pacing
            )
    assert len(store) == len(variants)


def test_usage_from_the_prompt_is_part_of_the_key_only_when_the_stream_carries_usage():
    store = StreamTemplates()
    step = Step(content="hello")
    prompts = [[{"role": "user", "content": "x" * n}] for n in (1, 40, 400)]
    for messages in prompts:
        served(store, step, METAS[0], "reasoning_content", shape("openai", False, messages))
    assert len(store) == 1
    for messages in prompts:
        request = shape("openai", True, messages)
        assert served(store, step, METAS[0], "reasoning_content", request) == plan_response(
            step, METAS[0], "reasoning_content", request
        )
    assert len(store) == 4


def test_the_store_is_bounded_in_entries_least_recently_used_out_first():
    store = StreamTemplates(max_entries=3)
    request = shape("openai", False)
    steps = [Step(content=f"answer {n}") for n in range(6)]
    for step in steps[:3]:
        served(store, step, METAS[0], "reasoning_content", request)
    served(store, steps[0], METAS[0], "reasoning_content", request)  # used again: kept
    for step in steps[3:]:
        served(store, step, METAS[0], "reasoning_content", request)
        assert len(store) <= 3
    hits = store.hits
    served(store, steps[5], METAS[0], "reasoning_content", request)
    assert store.hits == hits + 1
    for step in steps:  # evicted or kept, every answer is still the reference's
        assert served(store, step, METAS[1], "reasoning_content", request) == plan_response(
            step, METAS[1], "reasoning_content", request
        )
        assert len(store) <= 3


def test_the_store_is_bounded_in_bytes():
    store = StreamTemplates(max_bytes=64_000)
    request = shape("openai", False)
    for n in range(40):  # each template about 7 kB: kept, and the oldest let go for it
        step = Step(content=f"{n} " + "y" * 30, chunking=Chunking("char"))
        assert served(store, step, METAS[0], "reasoning_content", request) == plan_response(
            step, METAS[0], "reasoning_content", request
        )
        assert 0 < store.bytes <= 64_000
    assert len(store) < 40
    kept = (len(store), store.bytes)
    huge = Step(content="z" * 2_000, chunking=Chunking("size", 7))
    for meta in METAS:  # too big to keep (over an eighth of the budget): still right
        assert served(store, huge, meta, "both", request) == plan_response(
            huge, meta, "both", request
        )
    assert (len(store) - 1, store.bytes) == kept  # kept as "none", at no cost


def test_requests_the_templates_do_not_serve_get_the_reference():
    store = StreamTemplates()
    step = Step(content="x y")
    for meta, request in [
        (openai_wire.CompletionMeta("resp-no-prefix", 1, "m"), shape("openai", False)),
        (METAS[0], RequestShape(False, False, MESSAGES, (), "openai")),
    ]:
        for _ in range(3):
            assert store.plan(step, meta, "both", request) == plan_response(
                step, meta, "both", request
            )
    assert (len(store), store.hits) == (0, 0)


def test_a_request_field_that_cannot_be_a_key_gets_the_reference():
    store = StreamTemplates()
    step = Step(content="x y")
    request = RequestShape(True, False, MESSAGES, ["read"], "openai")  # type: ignore[arg-type]
    for meta in METAS[:3]:
        assert store.plan(step, meta, "both", request) == plan_response(step, meta, "both", request)
    assert (len(store), store.hits) == (0, 0)


def test_keys_seen_once_are_remembered_up_to_a_bound_oldest_forgotten_first():
    store = StreamTemplates()
    request = shape("ollama", include_usage=False)
    first = Step(content="first")
    store.plan(first, METAS[0], "both", request)
    for n in range(stream_template.MAX_SEEN):
        store.plan(Step(content=f"other {n}"), METAS[0], "both", request)
    store.plan(first, METAS[1], "both", request)  # forgotten: a first request again
    assert (len(store), store.hits) == (0, 0)
    store.plan(first, METAS[2], "both", request)
    assert (len(store), store.hits) == (1, 1)


def test_a_cleared_store_starts_over():
    store = StreamTemplates()
    step, request = Step(content="one two"), shape("openai", include_usage=False)
    for meta in METAS[:2]:
        store.plan(step, meta, "both", request)
    assert len(store) == 1
    store.clear()
    store.plan(step, METAS[2], "both", request)
    assert (len(store), store.hits) == (0, 1)


# Any step, any request shape, any meta: the template's plan is the reference's.

texts = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        [
            "chatcmpl-mock7",
            "lfm2-test",
            "1700000000",
            "2023-11-14T22:13:20.000000Z",
            'a "quoted" \\ back\nslash',
            "\ud800 lone",
            "resp_mock7 msg_mock7_1 call_mock7_0",
            stream_template.SUFFIX_MARK,
        ]
    ),
)
chunkings = st.sampled_from(
    [Chunking("whole"), Chunking("char"), Chunking("word"), Chunking("size", 3)]
)
delays = st.sampled_from([0.0, 0.0, 1.0, 12.5])
faults = st.one_of(
    st.none(),
    st.builds(CutFault, st.integers(0, 8), st.sampled_from(["abort", "eof"])),
    st.builds(StallFault, st.integers(0, 8), st.sampled_from([0.01, 0.5])),
    st.builds(  # a malformed line is written raw (no JSON escape): no lone surrogate
        MalformedFault,
        st.integers(0, 8),
        texts.filter(lambda t: t.encode("utf-8", "surrogatepass").decode("utf-8", "ignore") == t),
    ),
    st.builds(ErrorEventFault, st.integers(0, 8), texts, st.just("server_error"), st.none()),
    st.builds(HttpFault, st.sampled_from([429, 500]), texts, st.just("e"), st.none(), st.none()),
)
tool_calls = st.lists(
    st.builds(
        ToolCall,
        name=st.sampled_from(["read", "grep"]),
        arguments=st.one_of(texts, st.just('{"path": "/homelab/a.md"}')),
        id=st.one_of(st.none(), st.just("call_fixed"), st.just("chatcmpl-mock7")),
    ),
    max_size=2,
).map(tuple)
finish_reasons: st.SearchStrategy[FinishReason | None] = st.sampled_from(
    [None, "stop", "length", "tool_calls", "content_filter"]
)


@st.composite
def recorded_steps(draw: st.DrawFn) -> Step:
    """A recorded step: its texts are the joins of its recorded pieces."""
    chunks: list[RecordedChunk] = []
    gaps = st.sampled_from([0.0, 3.0])
    for part in ("reasoning", "content"):
        pieces = draw(st.lists(st.text(min_size=1, max_size=4), max_size=3))
        chunks += [RecordedChunk(part, p, after_ms=draw(gaps)) for p in pieces]
    calls: list[ToolCall] = []
    for index in range(draw(st.integers(0, 1))):
        pieces = ["", *draw(st.lists(st.text(min_size=1, max_size=4), max_size=3))]
        chunks += [RecordedChunk("call", p, call=index, after_ms=draw(gaps)) for p in pieces]
        calls.append(ToolCall("read", "".join(pieces)))
    return Step(
        content="".join(c.text for c in chunks if c.part == "content"),
        reasoning="".join(c.text for c in chunks if c.part == "reasoning"),
        tool_calls=tuple(calls),
        finish_reason=draw(finish_reasons),
        fault=draw(faults),
        recorded=tuple(chunks),
    )


authored_steps = st.builds(
    Step,
    content=texts,
    reasoning=texts,
    tool_calls=tool_calls,
    finish_reason=finish_reasons,
    chunking=chunkings,
    delay_ms=delays,
    ttft_ms=delays,
    fault=faults,
)
metas = st.builds(
    openai_wire.CompletionMeta,
    id=st.text(max_size=12).map(lambda s: "chatcmpl-" + s),
    created=st.integers(0, 4_102_444_800),
    model=texts,
)
messages = st.lists(
    st.fixed_dictionaries({"role": st.just("user"), "content": texts}), min_size=1, max_size=3
)


@given(
    step=st.one_of(authored_steps, recorded_steps()),
    first=metas,
    second=metas,
    api=st.sampled_from(APIS),
    include_usage=st.booleans(),
    field=st.sampled_from(REASONING_FIELDS),
    prompt=messages,
    pacing=st.sampled_from([REAL_PACING, NO_PACING, 0.5]),
)
def test_any_stream_from_a_template_is_the_reference_plan(
    step: Step,
    first: openai_wire.CompletionMeta,
    second: openai_wire.CompletionMeta,
    api: Format,
    include_usage: bool,
    field: ReasoningField,
    prompt: list[dict[str, Any]],
    pacing: float,
):
    store = StreamTemplates()
    request = shape(api, include_usage, prompt)
    for meta in (first, second, first):
        expected = plan_response(step, meta, field, request, pacing)
        assert served(store, step, meta, field, request, pacing) == expected
