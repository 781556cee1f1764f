from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mock_llm.flows.flow_file import FlowFileError, load_flow_file, parse_flows
from mock_llm.flows.model import (
    Chunking,
    CutFault,
    ErrorEventFault,
    Expect,
    Extract,
    HttpFault,
    MalformedFault,
    StallFault,
)

from ....support.cases import check_each


def parse(text: str) -> dict:
    return parse_flows(textwrap.dedent(text), source="flows.yaml")


def test_a_full_step_parses_into_the_model():
    flows = parse(
        """
        flows:
          demo:
            description: every field
            canary: cnry
            steps:
              - content: hello
                reasoning: hmm
                tool_calls:
                  - {name: read, arguments: {path: /homelab/a.md}, id: call_1}
                  - {name: grep, arguments: '{"pattern": "x"'}
                finish_reason: tool_calls
                chunking: 4
                delay_ms: 10
                ttft_ms: 250.5
                reasoning_field: reasoning
        """
    )
    flow = flows["demo"]
    step = flow.steps[0]
    assert (flow.description, flow.canary, flow.source) == ("every field", "cnry", "flows.yaml")
    assert (step.content, step.reasoning, step.chunking) == ("hello", "hmm", Chunking("size", 4))
    assert json.loads(step.tool_calls[0].arguments) == {"path": "/homelab/a.md"}
    assert step.tool_calls[0].id == "call_1"
    assert step.tool_calls[1].arguments == '{"pattern": "x"'
    assert (step.delay_ms, step.ttft_ms, step.reasoning_field) == (10.0, 250.5, "reasoning")


def test_defaults_of_a_bare_step():
    step = parse("flows:\n  f:\n    steps:\n      - content: hi\n")["f"].steps[0]
    assert step.chunking == Chunking("word")
    assert step.resolved_finish_reason == "stop"
    assert step.fault is None


@pytest.mark.parametrize(
    ("fault_yaml", "expected"),
    [
        (
            "{kind: http, status: 503}",
            HttpFault(503, HttpFault(503, "", "").message or "", "server_error"),
        ),
        ("{kind: cut, after_chunks: 4}", CutFault(4, "abort")),
        ("{kind: cut, after_chunks: 0, mode: eof}", CutFault(0, "eof")),
        ("{kind: stall, after_chunks: 2, seconds: 1.5}", StallFault(2, 1.5)),
        ("{kind: malformed, after_chunks: 3, line: 'oops'}", MalformedFault(3, "oops")),
        ("{kind: error_event, message: boom}", ErrorEventFault(0, "boom")),
    ],
)
def test_each_fault_kind_parses(fault_yaml: str, expected: object):
    fault = parse(f"flows:\n  f:\n    steps:\n      - fault: {fault_yaml}\n")["f"].steps[0].fault
    assert type(fault) is type(expected)
    if not isinstance(expected, HttpFault):
        assert fault == expected


def test_http_fault_defaults_to_openai_like_message_and_retry_after_for_429():
    fault = (
        parse("flows:\n  f:\n    steps:\n      - fault: {kind: http, status: 429}\n")["f"]
        .steps[0]
        .fault
    )
    assert isinstance(fault, HttpFault)
    assert fault.retry_after == 1.0
    assert fault.type == "rate_limit_exceeded"
    assert "Rate limit" in fault.message


def test_anchors_and_x_keys_are_allowed():
    flows = parse(
        """
        x-common: &answer {content: shared}
        flows:
          a: {steps: [*answer]}
          b: {steps: [*answer, {content: other}]}
        """
    )
    assert flows["a"].steps[0].content == flows["b"].steps[0].content == "shared"


INVALID_FILES: list[tuple[str, int | None, str]] = [
    ("", None, "the file is empty"),
    ("flows: [", 1, "not valid YAML"),
    ("- a\n- b\n", 1, "the file must be a mapping"),
    ("flow:\n  x: {}\n", 1, "unknown key 'flow'"),
    ("flows: {}\n", 1, "'flows' is empty"),
    ("flows:\n  bad name:\n    steps: [{content: x}]\n", 3, "may only use letters"),
    ("flows:\n  f:\n    description: x\n", 3, "missing 'steps'"),
    ("flows:\n  f:\n    steps: []\n", 3, "non-empty list"),
    ("flows:\n  f:\n    steps:\n      - contnet: x\n", 4, "unknown key 'contnet'"),
    (
        "flows:\n  f:\n    steps:\n      - content: x\n        content: y\n",
        5,
        "duplicate key 'content'",
    ),
    ("flows:\n  f:\n    steps:\n      - content: 12\n", 4, "'content' must be a string"),
    ("flows:\n  f:\n    steps:\n      - content: [a]\n", 4, "'content' must be a single value"),
    (
        "flows:\n  f:\n    steps:\n      - chunking: lines\n",
        4,
        "'chunking' must be whole, char, word",
    ),
    ("flows:\n  f:\n    steps:\n      - chunking: 0\n", 4, "'chunking' must be"),
    (
        "flows:\n  f:\n    steps:\n      - delay_ms: -1\n",
        4,
        "'delay_ms' must be a finite number >= 0",
    ),
    ("flows:\n  f:\n    steps:\n      - ttft_ms: .inf\n", 4, "finite number"),
    ("flows:\n  f:\n    steps:\n      - delay_ms: true\n", 4, "'delay_ms' must be a number"),
    (
        "flows:\n  f:\n    steps:\n      - finish_reason: done\n",
        4,
        "'finish_reason' must be one of",
    ),
    (
        "flows:\n  f:\n    steps:\n      - reasoning_field: thoughts\n",
        4,
        "'reasoning_field' must be one of",
    ),
    (
        "flows:\n  f:\n    steps:\n      - tool_calls: {name: x}\n",
        4,
        "'tool_calls' must be a list",
    ),
    (
        "flows:\n  f:\n    steps:\n      - tool_calls:\n          - name: x\n",
        5,
        "missing 'arguments'",
    ),
    (
        "flows:\n  f:\n    steps:\n      - tool_calls:\n          - {name: x, arguments: [1]}\n",
        5,
        "'arguments' must be a mapping or a JSON string",
    ),
    ("flows:\n  f:\n    steps:\n      - fault: {kind: explode}\n", 4, "'kind' must be one of"),
    ("flows:\n  f:\n    steps:\n      - fault: {status: 500}\n", 4, "missing 'kind'"),
    ("flows:\n  f:\n    steps:\n      - fault: {kind: http}\n", 4, "needs 'status'"),
    (
        "flows:\n  f:\n    steps:\n      - fault: {kind: http, status: 200}\n",
        4,
        "'status' must be 400 to 599",
    ),
    ("flows:\n  f:\n    steps:\n      - fault: {kind: http, status: 5.5}\n", 4, "whole number"),
    (
        "flows:\n  f:\n    steps:\n      - fault: {kind: cut, seconds: 1}\n",
        4,
        "unknown key 'seconds'",
    ),
    (
        "flows:\n  f:\n    steps:\n      - fault: {kind: cut, after_chunks: -2}\n",
        4,
        "0 or more",
    ),
    (
        "flows:\n  f:\n    steps:\n      - fault: {kind: cut, mode: later}\n",
        4,
        "'mode' must be one of",
    ),
    ("flows:\n  f:\n    steps:\n      - fault: {kind: stall}\n", 4, "needs 'seconds'"),
    (
        'flows:\n  f:\n    steps:\n      - fault: {kind: malformed, line: "a\\nb"}\n',
        4,
        "single line",
    ),
    ("flows:\n  f:\n    steps:\n      - fault: cut\n", 4, "'fault' must be a mapping"),
    ("flows:\n  1: {steps: [{content: x}]}\n", 2, "keys must be strings"),
    ("flows:\n  f:\n    ? [a, b]\n    : 1\n", 3, "keys must be strings, not a list"),
    ("flows:\n  f: {steps: [{content: !!python/name:os.system x}]}\n", 2, "cannot read"),
    ("flows:\n  f: {steps: [{delay_ms: !!int abc}]}\n", 2, "cannot read this value"),
    ('flows:\n  f: {steps: [{content: "\\ud800"}]}\n', 2, "lone UTF-16 surrogate"),
    ('flows:\n  f: {steps: [{content: "a\x00"}]}\n', 2, "#x0000 is not allowed"),
    ("flows:\n  f: {steps: [{content: " + "[" * 5000 + "]" * 5000 + "}]}\n", None, "nests"),
    (
        "flows:\n  f:\n    steps:\n      - tool_calls:\n"
        "          - {name: x, arguments: &a {k: [*a]}}\n",
        5,
        "'arguments' nests deeper than 100 levels",
    ),
    (
        "flows:\n  f:\n    steps:\n      - tool_calls:\n"
        "          - {name: x, arguments: {when: 2024-01-01}}\n",
        5,
        "'arguments' cannot be sent as JSON",
    ),
    ("flows:\n  f: {steps: [{extract: true, content: x}]}\n", 2, "drop 'content'"),
    ("flows:\n  f: {steps: [{extract: yes please}]}\n", 2, "true or a mapping"),
    ("flows:\n  f: {steps: [{extract: {sentences: 0}}]}\n", 2, "from 1 to 10, not 0"),
    ("flows:\n  f: {steps: [{extract: {sentences: 11}}]}\n", 2, "from 1 to 10, not 11"),
    ("flows:\n  f: {steps: [{extract: {top: 3}}]}\n", 2, "unknown key 'top'"),
    ("flows:\n  f: {steps: [{extract: {fallback: 3}}]}\n", 2, "'fallback' must be a string"),
    ("flows:\n  f: {steps: [{extract: {read: ''}}]}\n", 2, "'read' must name a tool"),
    ("flows:\n  f: {steps: [{extract: {read: 7}}]}\n", 2, "'read' must be a string"),
]
"""A flow file's text, the line its error names, and words of the problem it states."""


def test_invalid_flow_file_names_file_line_and_problem():
    def names_them(case: tuple[str, int | None, str]) -> None:
        text, line, problem = case
        with pytest.raises(FlowFileError) as caught:
            parse_flows(text, source="flows.yaml")
        error = caught.value
        assert error.source == "flows.yaml"
        assert error.line == line
        assert problem in error.problem
        assert str(error).startswith(f"flows.yaml:{line}: " if line else "flows.yaml: ")

    cases = [(f"{n}: {case[2]!r}", case) for n, case in enumerate(INVALID_FILES)]
    assert check_each(cases, names_them) == len(INVALID_FILES)


def test_an_extract_step_reads_true_or_its_options():
    flows = parse_flows(
        "flows:\n  a: {steps: [{extract: true}]}\n"
        "  b: {steps: [{extract: {sentences: 1, fallback: no idea, preamble: Notes say}}]}\n"
        "  c: {steps: [{extract: {read: read}}]}\n",
        source="flows.yaml",
    )
    assert flows["a"].steps[0].extract == Extract()
    assert flows["b"].steps[0].extract == Extract(1, "no idea", "Notes say")
    assert flows["c"].steps[0].extract == Extract(read="read")


def test_load_flow_file_reads_from_disk(tmp_path: Path):
    path = tmp_path / "mine.yaml"
    path.write_text("flows:\n  mine:\n    steps: [{content: hi}]\n", encoding="utf-8")
    assert load_flow_file(path)["mine"].source == str(path)


def test_missing_flow_file_is_a_flow_file_error(tmp_path: Path):
    with pytest.raises(FlowFileError, match="cannot read the file"):
        load_flow_file(tmp_path / "absent.yaml")


def test_non_utf8_flow_file_is_a_flow_file_error(tmp_path: Path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"flows:\n  f: {steps: [{content: \xe9}]}\n")
    with pytest.raises(FlowFileError, match="cannot read the file"):
        load_flow_file(path)


def test_json_is_read_as_the_same_schema_with_its_lines():
    text = (
        '{\n\t"flows": {\n\t\t"j": {"steps": [{"content": "caf\\u00e9 \\ud83d\\ude00"}]}\n\t}\n}\n'
    )
    assert parse_flows(text, source="body")["j"].steps[0].content == "caf\u00e9 \U0001f600"
    with pytest.raises(FlowFileError) as caught:
        parse_flows(text.replace('"content"', '"contnet"'), source="body")
    assert caught.value.line == 3


def test_tool_call_arguments_may_not_expand_past_the_node_budget():
    bomb = "x-0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"x-{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 6)
    )
    text = bomb + "flows:\n  f:\n    steps:\n      - tool_calls: [{name: x, arguments: {k: *a5}}]\n"
    with pytest.raises(FlowFileError, match="more than 10000 values"):
        parse_flows(text, source="flows.yaml")


EXPECT = "{shown: hi, recovery: false, stripped_chars: 0, error: null, requests: 1}"


def with_expect(block: str) -> str:
    return f"flows:\n  f:\n    expect: {block}\n    steps: [{{content: hi}}]\n"


def test_an_expect_block_parses_into_the_model():
    block = "{shown: '', recovery: true, stripped_chars: 192, error: malformed, requests: 2}"
    assert parse(with_expect(block))["f"].expect == Expect("", True, 192, "malformed", 2)


def test_a_flow_without_expect_states_no_outcome():
    assert parse("flows:\n  f: {steps: [{content: hi}]}\n")["f"].expect is None


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        ("{shown: hi}", "missing 'error', 'recovery', 'requests', 'stripped_chars'"),
        (EXPECT.replace("requests: 1", "requests: 1, shwon: x"), "unknown key 'shwon'"),
        (EXPECT.replace("recovery: false", "recovery: maybe"), "'recovery' must be true or false"),
        (EXPECT.replace("stripped_chars: 0", "stripped_chars: -3"), "0 or more"),
        (EXPECT.replace("stripped_chars: 0", "stripped_chars: '9'"), "whole number"),
        (EXPECT.replace("error: null", "error: timeout"), "'error' must be malformed or null"),
        (EXPECT.replace("requests: 1", "requests: 0"), "'requests' must be 1 or more"),
        (EXPECT.replace("shown: hi", "shown: 7"), "'shown' must be a string"),
        (EXPECT.replace("recovery: false", "recovery: true"), "needs 'requests' of 2 or more"),
        (
            EXPECT.replace("error: null", "error: malformed").replace("requests: 1", "requests: 2"),
            "'recovery' must be true",
        ),
        ("[1]", "must be a mapping"),
    ],
)
def test_invalid_expect_block_names_its_line_and_problem(block: str, problem: str):
    with pytest.raises(FlowFileError) as caught:
        parse_flows(with_expect(block), source="flows.yaml")
    assert caught.value.line == 3
    assert problem in caught.value.problem


def with_family(fields: str) -> str:
    return f"flows:\n  f:\n    steps: [{{content: hi}}]\n{fields}"


def test_a_family_flow_states_its_outcome_for_its_family_and_for_other_models():
    flow = parse(with_family(f"    family: Qwen\n    expect: {EXPECT}\n    elsewhere: {EXPECT}\n"))[
        "f"
    ]
    assert (flow.family, flow.elsewhere) == ("Qwen", Expect("hi", False, 0, None, 1))


def test_a_family_flow_without_elsewhere_holds_for_every_model():
    flow = parse(with_family(f"    family: DeepSeek\n    expect: {EXPECT}\n"))["f"]
    assert flow.expect_for("lfm2") == flow.expect_for("deepseek-v4") == flow.expect


def test_a_family_flows_outcome_follows_the_model_name():
    other = EXPECT.replace("shown: hi", "shown: raw")
    flow = parse(with_family(f"    family: Qwen\n    expect: {EXPECT}\n    elsewhere: {other}\n"))
    assert flow["f"].expect_for("Qwen/Qwen3-8B") == flow["f"].expect
    assert flow["f"].expect_for("lfm2-1.2b") == flow["f"].elsewhere
    assert flow["f"].expect_for(None) == flow["f"].elsewhere


def test_a_family_flow_states_its_outcome_for_other_families_that_write_or_half_write_it():
    other = EXPECT.replace("shown: hi", "shown: raw")
    part = EXPECT.replace("shown: hi", "shown: part")
    fields = f"    family: Qwen\n    written_by: [GLM]\n    expect: {EXPECT}\n"
    fields += f"    elsewhere: {other}\n    by_family: {{Seed-OSS: {part}}}\n"
    flow = parse(with_family(fields))["f"]
    assert flow.expect_for("glm-4.6") == flow.expect
    assert flow.expect_for("seed-oss-36b") == Expect("part", False, 0, None, 1)
    assert flow.expect_for("lfm2") == flow.elsewhere


@pytest.mark.parametrize(
    ("fields", "line", "problem"),
    [
        ("    family: Qwen4\n", 4, "unknown family 'Qwen4'; known: LFM2, Qwen3-Coder"),
        (f"    elsewhere: {EXPECT}\n", 4, "it needs 'family' and 'expect'"),
        (f"    family: Qwen\n    elsewhere: {EXPECT}\n", 5, "it needs 'family' and 'expect'"),
        ("    family: [Qwen]\n", 4, "'family' must be a single value"),
        ("    written_by: [GLM]\n", 4, "'written_by' needs 'family'"),
        ("    family: Qwen\n    written_by: GLM\n", 5, "must be a list of family names"),
        ("    family: Qwen\n    written_by: [GLM, Qwen5]\n", 5, "unknown family 'Qwen5'"),
        ("    family: Qwen\n    written_by: [GLM, GLM]\n", 5, "'GLM' named twice"),
        ("    family: Qwen\n    written_by: [Qwen]\n", 5, "'Qwen' named twice"),
        ("    family: Qwen\n    by_family: [GLM]\n", 5, "maps family names to outcomes"),
        (
            f"    family: Qwen\n    written_by: [GLM]\n    by_family: {{GLM: {EXPECT}}}\n",
            6,
            "'GLM' named twice",
        ),
        (f"    by_family: {{GLM: {EXPECT}}}\n", 4, "'by_family' needs 'family'"),
    ],
)
def test_a_bad_family_field_names_its_line_and_problem(fields: str, line: int, problem: str):
    with pytest.raises(FlowFileError) as caught:
        parse_flows(with_family(fields), source="flows.yaml")
    assert caught.value.line == line
    assert problem in caught.value.problem


FLOW_ALPHABET = st.sampled_from(list("flows:steps-content{}[]&*!|>'\"#\n\t \\0a1?,%@`"))


@given(st.text(alphabet=FLOW_ALPHABET, max_size=200) | st.text(max_size=200))
def test_any_text_is_either_flows_or_a_flow_file_error(text: str):
    """The parser serves HTTP too: whatever the text, it fails only with FlowFileError."""
    try:
        parse_flows("flows:\n  f:\n    steps:\n      - " + text, source="body")
        parse_flows(text, source="body")
    except FlowFileError:
        pass


def _laughs(levels: int = 9) -> str:
    """The billion-laughs shape: each anchor a list of nine of the one before."""
    lines = ['x-0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"x-{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("x-a: &a [*a]\nflows:\n  f: {steps: [{tool_calls: [{name: r, arguments: {p: *a}}]}]}\n",
         "nests deeper than 100 levels"),
        ("flows:\n  f: &f {steps: [*f]}\n", "unknown key 'steps'"),
        (_laughs() + "flows:\n  f: {steps: [{tool_calls: [{name: r, arguments: {p: *a8}}]}]}\n",
         "holds more than 10000 values"),
        (_laughs() + "flows: *a8\n", "'flows' must be a mapping"),
    ],
    ids=["recursive-alias", "recursive-flow", "laughs-in-arguments", "laughs-as-flows"],
)  # fmt: skip
def test_a_flow_file_with_an_alias_bomb_is_a_clear_error_not_a_traceback(
    tmp_path: Path, text: str, problem: str
):
    """Issue 12 reported a raw traceback for a recursive alias and seconds and 750 MB for a
    billion-laughs file given to --flows; both are refused by the bounded walk, in words."""
    path = tmp_path / "bomb.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FlowFileError) as caught:
        load_flow_file(path)
    assert problem in caught.value.problem
