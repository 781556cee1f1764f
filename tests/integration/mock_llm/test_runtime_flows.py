"""Flows added at run time (`POST /_mock/flows`): validated like a file, idempotent, bounded.

Flows added to the session's mock are named after the test's KEY, so they never meet
another test's; the limits are checked on a small mock of this module's own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from mock_llm import build_settings, serve_mock

from ...support.deadlines import DEADLINE_S
from ...support.sse import chat_body, read_sse
from ..helpers.openai_errors import assert_openai_error

EXPECT = "{shown: hi there, recovery: false, stripped_chars: 0, error: null, requests: 1}"


def flow_yaml(name: str, content: str = "hi there") -> str:
    return f"flows:\n  {name}:\n    expect: {EXPECT}\n    steps:\n      - content: {content}\n"


async def listed(http: httpx.AsyncClient, name: str) -> dict:
    [flow] = [f for f in (await http.get("/_mock/flows")).json()["flows"] if f["name"] == name]
    return flow


async def test_an_added_flow_plays_like_a_file_flow(http: httpx.AsyncClient, key: str):
    response = await http.post("/_mock/flows", content=flow_yaml(f"rt-{key}"))
    assert response.status_code == 200
    assert response.json()["added"] == [f"rt-{key}"]
    result = await read_sse(http, chat_body(f"[[mock:rt-{key}#{key}]]"))
    assert result.done
    assert result.joined("content") == "hi there"


async def test_an_added_flow_is_listed_with_source_runtime_and_its_expect_block(
    http: httpx.AsyncClient, key: str
):
    await http.post("/_mock/flows", content=flow_yaml(f"rt-{key}"))
    flow = await listed(http, f"rt-{key}")
    assert flow["source"] == "runtime"
    assert flow["expect"] == {
        "shown": "hi there",
        "recovery": False,
        "stripped_chars": 0,
        "error": None,
        "requests": 1,
    }


async def test_adding_the_same_flow_again_changes_nothing(http: httpx.AsyncClient, key: str):
    first = await http.post("/_mock/flows", content=flow_yaml(f"rt-{key}"))
    again = await http.post("/_mock/flows", content=flow_yaml(f"rt-{key}"))
    assert again.status_code == 200
    assert (again.json()["added"], again.json()["unchanged"]) == ([], [f"rt-{key}"])
    assert again.json()["runtime_flows"] == first.json()["runtime_flows"]


async def test_a_different_flow_under_a_taken_name_is_409_and_the_first_stays(
    http: httpx.AsyncClient, key: str
):
    await http.post("/_mock/flows", content=flow_yaml(f"rt-{key}"))
    response = await http.post("/_mock/flows", content=flow_yaml(f"rt-{key}", "changed"))
    assert_openai_error(response, 409, f"'rt-{key}' (from runtime)", code="flow_conflict")
    result = await read_sse(http, chat_body(f"[[mock:rt-{key}#{key}]]"))
    assert result.joined("content") == "hi there"


async def test_a_builtin_cannot_be_replaced_at_run_time(http: httpx.AsyncClient):
    response = await http.post("/_mock/flows", content=flow_yaml("clean", "not clean"))
    assert_openai_error(response, 409, "'clean' (from builtin)", code="flow_conflict")


async def test_a_json_body_is_read_as_the_same_schema(http: httpx.AsyncClient, key: str):
    body = {"flows": {f"rt-{key}": {"steps": [{"content": "from json", "chunking": "char"}]}}}
    response = await http.post("/_mock/flows", json=body)
    assert response.json()["added"] == [f"rt-{key}"]
    result = await read_sse(http, chat_body(f"[[mock:rt-{key}#{key}]]"))
    assert result.joined("content") == "from json"


async def test_health_counts_added_flows(http: httpx.AsyncClient, key: str):
    before = (await http.get("/healthz")).json()["flows"]
    await http.post("/_mock/flows", content=flow_yaml(f"rt-{key}"))
    assert (await http.get("/healthz")).json()["flows"] == before + 1


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"flows: [", "Bad flows: line 1: not valid YAML"),
        (b"", "the file is empty"),
        (
            b"flows:\n  x:\n    steps:\n      - contnet: hi\n",
            "line 4: flow 'x' step 1: unknown key",
        ),
        (b"flows:\n  x:\n    steps:\n      - content: 12\n", "line 4: 'content' must be a string"),
        (b"flows:\n  x:\n    steps: {content: hi}\n", "line 3: flow 'x': 'steps' must be"),
        (b"flows:\n  x:\n    expect: {shown: hi}\n    steps: [{content: hi}]\n", "missing"),
        (b'{"flows": {"x": {"steps": [{"delay_ms": "slow"}]}}}', "'delay_ms' must be a number"),
        (b'{"flows": {"x": {"steps": [{"content": "a"}]}, "x": {}}}', "duplicate key 'x'"),
        (b"flows:\n  x: {steps: [{content: \xe9}]}\n", "not UTF-8"),
        (b"flows:\n  x: {steps: [{content: " + b"[" * 5000 + b"]" * 5000 + b"}]}\n", "nests"),
    ],
)
async def test_bad_flows_are_400_naming_the_line_and_problem(
    http: httpx.AsyncClient, body: bytes, fragment: str
):
    response = await http.post("/_mock/flows", content=body)
    assert_openai_error(response, 400, fragment, code="invalid_flows")
    assert (await http.get("/healthz")).status_code == 200


async def test_a_bad_flow_adds_none_of_the_good_ones_beside_it(http: httpx.AsyncClient, key: str):
    body = f"flows:\n  rt-{key}: {{steps: [{{content: ok}}]}}\n  bad: {{steps: []}}\n"
    assert (await http.post("/_mock/flows", content=body)).status_code == 400
    response = await http.post("/v1/chat/completions", json=chat_body(f"[[mock:rt-{key}#{key}]]"))
    assert response.json()["error"]["code"] == "unknown_flow"


@pytest.fixture(scope="module")
def small_mock() -> Iterator[str]:
    with serve_mock(build_settings(max_runtime_flows=2, max_flows_body_bytes=1024)) as url:
        yield url


@pytest.fixture
async def small(small_mock: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=small_mock, timeout=DEADLINE_S) as client:
        yield client


async def test_a_body_over_the_limit_is_413(small: httpx.AsyncClient):
    body = flow_yaml("big", "x" * 2000)
    assert_openai_error(
        await small.post("/_mock/flows", content=body), 413, "1024 bytes", code="flows_too_large"
    )


async def test_aliases_expanding_past_the_limit_are_413(small: httpx.AsyncClient):
    body = "x-a: &a {content: " + "y" * 200 + "}\nflows:\n  amp: {steps: [" + "*a, " * 20 + "]}\n"
    response = await small.post("/_mock/flows", content=body)
    assert_openai_error(response, 413, "once YAML aliases are expanded", code="flows_too_large")


async def test_flows_past_the_runtime_limit_are_409(small: httpx.AsyncClient, key: str):
    def body(*names: str) -> str:
        return "flows:\n" + "".join(f"  {n}-{key}: {{steps: [{{content: x}}]}}\n" for n in names)

    assert (await small.post("/_mock/flows", content=body("a"))).status_code == 200
    response = await small.post("/_mock/flows", content=body("a", "b", "c"))
    assert_openai_error(response, 409, "would make 3 flows", code="runtime_flow_limit")


async def test_an_extract_flow_answers_from_the_context_the_request_carried(
    http: httpx.AsyncClient, key: str
):
    flows = f"flows:\n  ex-{key}:\n    steps:\n      - {{extract: {{sentences: 1}}, chunking: 5}}\n"
    assert (await http.post("/_mock/flows", content=flows)).status_code == 200
    body = chat_body(f"How long does the UPS hold? [[mock:ex-{key}#{key}]]")
    note = '<excerpt path="/homelab/ups.md">The UPS holds the rack for 40 minutes.</excerpt>'
    body["messages"].insert(0, {"role": "system", "content": f"Use the notes.\n{note}"})
    result = await read_sse(http, body)
    assert result.done
    assert result.joined("content") == (
        "From the notes:\n- The UPS holds the rack for 40 minutes. (source: /homelab/ups.md)"
    )
    assert (await listed(http, f"ex-{key}"))["steps"][0]["extract"]["sentences"] == 1
