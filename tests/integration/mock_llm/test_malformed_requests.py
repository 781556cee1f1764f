"""Every malformed request to either server gets a 4xx that says what is wrong (issue 12).

One matrix over both real servers (uvicorn on free loopback ports), sent byte for byte over
a raw socket, since most of these requests are ones a well-behaved client cannot send, each
case checked in turn by one test that names every case that fails. For each case: the
status is the expected 4xx (never a 5xx), the body says what is wrong in words and stays
short whatever the request held (never an echo of unbounded input), and then the server is
still healthy: the same keep-alive connection answers `GET /healthz` where the server kept
it open, and a new connection does in every case.

Some cases live elsewhere and are not repeated here: headers over 32 KiB (431), bodies over
the cap (413) and bodies shorter than their Content-Length (408) in test_request_limits.py;
the mock's bad journal queries, nesting past 64 levels and lone surrogates in
test_bad_input.py; the app's 422 that never echoes its input and its lone surrogate in
test_chat_api.py.

Bugs this matrix found (issue 12), each pinned by the cases named:
- the app answered a body sent as a form, text/plain or with no Content-Type with a 422
  "Input should be a valid dictionary or object to extract fields from"; now a 415 naming
  the type to use (`app-no-content-type`, `app-text-plain`, `app-form`, `app-multipart`);
- the app answered invalid UTF-8, nesting past the recursion limit and a 5000-digit number
  with a bare 400 "There was an error parsing the body"; now it says which
  (`app-invalid-utf8`, `app-deep-array`, `app-deep-object`, `app-huge-integer`);
- both served an HTTP/1.1 request with no Host header, two of them, or one that is not a
  host (`a b`, `<x>`); now a 400 (`*-no-host`, `*-two-hosts`, `*-host-*`);
- both took request targets up to uvicorn's ~64 KB, and the mock echoed a 60 KB path in its
  404; now a 414 past 8 KiB (`*-query-20kb`, `*-path-10kb`);
- the mock echoed unbounded input in its errors: a 100 KB role or flow name, a 20 KB query
  parameter name came back whole; now cut (`mock-huge-role`, `mock-huge-flow-name`,
  `mock-huge-query-name`, `mock-long-unknown-path`).
- the mock answered 500 to a 5000-digit number (`n`, `max_tokens`) and to a role that is a
  list, and each left its journal entry in progress forever, so every later settle read
  waited out its timeout; now a 400 (the cases at the end, on a mock of their own), and an
  unexpected failure of the chat handler still ends its journal entry.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

import pytest

from mock_llm import serve_mock

from ...support.cases import check_each
from ...support.deadlines import DEADLINE_S
from ..conftest import AppUnderTest

Server = Literal["app", "mock"]
SERVERS: tuple[Server, ...] = ("app", "mock")
MAX_ERROR_BODY = 2_000
"""No refusal may be longer than this, whatever the request held (the cases send up to 60 KB)."""
UVICORN_400 = "Invalid HTTP request received."
"""uvicorn's own answer to bytes its parser refuses: before any app code runs, and closing."""


# --- a raw HTTP/1.1 exchange ------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    @property
    def closes(self) -> bool:
        return self.headers.get("connection", "").lower() == "close"


class Connection:
    """One TCP connection to a server: send bytes as they are, read one answer at a time."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        assert parts.hostname is not None
        assert parts.port is not None
        self._sock = socket.create_connection((parts.hostname, parts.port), timeout=DEADLINE_S)
        self._buffer = b""

    def close(self) -> None:
        self._sock.close()

    def send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def _fill(self) -> bool:
        chunk = self._sock.recv(65536)
        self._buffer += chunk
        return bool(chunk)

    def _take(self, size: int) -> bytes:
        while len(self._buffer) < size:
            if not self._fill():
                raise ConnectionError("the server closed the connection mid-answer")
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def _line(self) -> bytes:
        while b"\r\n" not in self._buffer:
            if not self._fill():
                raise ConnectionError("the server closed the connection")
        line, self._buffer = self._buffer.split(b"\r\n", 1)
        return line

    def answer(self) -> Answer:
        status_line = self._line()
        status = int(status_line.split(b" ", 2)[1])
        headers: dict[str, str] = {}
        while line := self._line():
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while size := int(self._line().split(b";")[0], 16):
                body += self._take(size)
                self._take(2)
            self._line()
        elif "content-length" in headers:
            body = self._take(int(headers["content-length"]))
        else:
            while self._fill():
                pass
            body, self._buffer = self._buffer, b""
        return Answer(status, headers, body)

    def is_closed(self) -> bool:
        """Whether the server has closed its side (read to the end of what it sent)."""
        try:
            while self._fill():
                pass
        except ConnectionResetError:
            pass
        return True


def request(
    method: str,
    path: str,
    body: bytes | None = None,
    content_type: str | None = "application/json",
    headers: tuple[tuple[str, str], ...] = (),
    host: str | None = "localhost",
) -> bytes:
    """An HTTP/1.1 request as bytes, with a Content-Length for any body, kept alive."""
    lines = [f"{method} {path} HTTP/1.1"]
    if host is not None:
        lines.append(f"Host: {host}")
    if body is not None:
        if content_type is not None:
            lines.append(f"Content-Type: {content_type}")
        lines.append(f"Content-Length: {len(body)}")
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


def chunked(path: str, *chunks: bytes) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    head += "Transfer-Encoding: chunked\r\n\r\n"
    return head.encode() + b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"


HEALTHZ = request("GET", "/healthz")


def chat(obj: object) -> bytes:
    """A mock chat body: `obj` merged into a valid request (None values removed)."""
    base: dict[str, object] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    merged = {**base, **obj} if isinstance(obj, dict) else obj
    return json.dumps(merged).encode()


# --- the matrix ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    server: Server
    raw: bytes
    status: int
    says: str
    """Words the body must hold: what is wrong."""


CHAT = "/api/chat"
COMPLETIONS = "/v1/chat/completions"
DEEP = b"[" * 30_000 + b"]" * 30_000  # under the app's 64 KiB body cap
DIGITS = b"9" * 5_000  # past Python's 4300-digit limit for int()
HUGE = "x" * 60_000
JSON_ONLY = "Content-Type: application/json"


def app_cases() -> list[Case]:
    def case(id: str, raw: bytes, status: int, says: str) -> Case:
        return Case(f"app-{id}", "app", raw, status, says)

    def post(body: bytes, content_type: str | None = "application/json") -> bytes:
        return request("POST", CHAT, body, content_type)

    return [
        # wrong method
        case("put-chat", request("PUT", CHAT, b"{}"), 405, "Method Not Allowed"),
        case("get-chat", request("GET", CHAT), 405, "Method Not Allowed"),
        case("post-history", request("POST", "/api/history", b"{}"), 405, "Method Not Allowed"),
        case("post-info", request("POST", "/api/info", b"{}"), 405, "Method Not Allowed"),
        case("delete-healthz", request("DELETE", "/healthz"), 405, "Method Not Allowed"),
        case("post-static", request("POST", "/static/app.js", b""), 405, "Method Not Allowed"),
        case("post-page", request("POST", "/", b""), 405, "Method Not Allowed"),
        # wrong or missing Content-Type: a cross-site form can send these without asking
        case("no-content-type", post(b'{"message": "hi"}', None), 415, JSON_ONLY),
        case("text-plain", post(b'{"message": "hi"}', "text/plain"), 415, JSON_ONLY),
        case("form", post(b"message=hi", "application/x-www-form-urlencoded"), 415, JSON_ONLY),
        case(
            "multipart",
            post(
                b"--b\r\nContent-Disposition: form-data; name=m\r\n\r\nhi\r\n--b--\r\n",
                "multipart/form-data; boundary=b",
            ),
            415,
            JSON_ONLY,
        ),
        # not JSON, not an object
        case("invalid-json", post(b'{"message": '), 422, "not valid JSON"),
        case("array", post(b"[1, 2]"), 422, "must be a JSON object"),
        case("string", post(b'"hi"'), 422, "must be a JSON object"),
        case("null", post(b"null"), 422, "must be a JSON object"),
        case("number", post(b"42"), 422, "must be a JSON object"),
        case("empty-body", post(b""), 422, "The request body is empty"),
        # wrong field types, extra fields
        case("message-number", post(b'{"message": 42}'), 422, "valid string"),
        case("message-null", post(b'{"message": null}'), 422, "valid string"),
        case("message-list", post(b'{"message": ["hi"]}'), 422, "valid string"),
        case("message-object", post(b'{"message": {"a": 1}}'), 422, "valid string"),
        case("session-number", post(b'{"message": "hi", "session": 5}'), 422, "valid string"),
        case("extra-field", post(b'{"message": "hi", "model": "x"}'), 422, "Extra inputs"),
        # huge numbers, deep nesting
        case("huge-integer", post(b'{"message": ' + DIGITS + b"}"), 400, "too many digits"),
        case("infinity", post(b'{"message": 1e999}'), 422, "valid string"),
        case("nan", post(b'{"message": NaN}'), 422, "valid string"),
        case("deep-array", post(b'{"message": ' + DEEP + b"}"), 400, "nests too deeply"),
        case("deep-object", post(b'{"a":' * 10_000 + b"1" + b"}" * 10_000), 400, "too deeply"),
        # bytes and characters
        case("invalid-utf8", post(b'{"message": "caf\xe9 \xff"}'), 400, "not valid UTF-8"),
        case("nul-escape", post(b'{"message": "a\\u0000b"}'), 422, "NUL character"),
        case("raw-nul", post(b'{"message": "a\x00b"}'), 422, "not valid JSON"),
        case("raw-newline", post(b'{"message": "a\nb"}'), 422, "not valid JSON"),
        # chunked bodies
        case("chunked-invalid-json", chunked(CHAT, b'{"mess', b"age"), 422, "not valid JSON"),
        case("chunked-array", chunked(CHAT, b"[", b"]"), 422, "must be a JSON object"),
        # unknown paths
        case("unknown-path", request("GET", "/nope"), 404, "Not Found"),
        case("unknown-api", request("GET", "/api/nope"), 404, "Not Found"),
        case("unknown-static", request("GET", "/static/nope.js"), 404, "Not Found"),
        case("static-dotdot", request("GET", "/static/../pyproject.toml"), 404, "Not Found"),
        case("static-encoded", request("GET", "/static/%2e%2e/pyproject.toml"), 404, "Not Found"),
        case("static-backslash", request("GET", "/static/..%5cpyproject.toml"), 404, "Not Found"),
        case("static-nul", request("GET", "/static/app.js%00"), 404, "Not Found"),
        case("invalid-utf8-path", request("GET", "/api/%ff%fe"), 404, "Not Found"),
        # absurd query strings
        case("limit-word", request("GET", "/api/history?limit=abc"), 422, "valid integer"),
        case("limit-zero", request("GET", "/api/history?limit=0"), 422, "greater than"),
        case("limit-huge", request("GET", "/api/history?limit=1000"), 422, "less than"),
        case("limit-digits", request("GET", "/api/history?limit=" + "9" * 5000), 422, "integer"),
        case("limit-nul", request("GET", "/api/history?limit=%00"), 422, "valid integer"),
        case("session-bad", request("GET", "/api/history?session=a/b"), 422, "pattern"),
        case("session-utf8", request("GET", "/api/history?session=%ff%fe%fd%fc"), 422, "pattern"),
        case("query-20kb", request("GET", "/api/history?" + "a=1&" * 5000), 414, "8192 bytes"),
        case("path-10kb", request("GET", "/" + "a" * 10_000), 414, "8192 bytes"),
    ]


def mock_cases() -> list[Case]:
    def case(id: str, raw: bytes, status: int, says: str) -> Case:
        return Case(f"mock-{id}", "mock", raw, status, says)

    def post(body: bytes, path: str = COMPLETIONS, content_type: str | None = None) -> bytes:
        return request("POST", path, body, content_type or "application/json")

    flows, side_calls = "/_mock/flows", "/_mock/side-calls"
    return [
        # wrong method
        case("post-models", request("POST", "/v1/models", b"{}"), 405, "POST /v1/models"),
        case("put-journal", request("PUT", "/_mock/requests", b""), 405, "PUT /_mock/requests"),
        case("delete-flows", request("DELETE", flows), 405, "DELETE /_mock/flows"),
        case("patch-side-calls", request("PATCH", side_calls, b"{}"), 405, "PATCH"),
        case("post-healthz", request("POST", "/healthz", b""), 405, "POST /healthz"),
        # a wrong Content-Type is not read as anything but JSON: what is in the body decides
        case(
            "form-body",
            post(b"model=m", content_type="application/x-www-form-urlencoded"),
            400,
            "not valid JSON",
        ),
        # not JSON, not an object
        case("invalid-json", post(b'{"model": '), 400, "not valid JSON"),
        case("array", post(b"[]"), 400, "must be a JSON object"),
        case("string", post(b'"hi"'), 400, "must be a JSON object"),
        case("empty-body", post(b""), 400, "not valid JSON"),
        case("flows-not-yaml", post(b"flows: [", flows), 400, "not valid YAML"),
        case("flows-array", post(b"[1]", flows), 400, "must be a mapping"),
        case("flows-empty", post(b"", flows), 400, "the file is empty"),
        case("side-calls-not-json", post(b"{", side_calls), 400, "not JSON"),
        case("side-calls-array", post(b"[1]", side_calls), 400, "must be a JSON object"),
        case("side-calls-empty", post(b"", side_calls), 400, "not JSON"),
        # wrong field types
        case("model-number", post(chat({"model": 5})), 400, "model parameter"),
        case("messages-string", post(chat({"messages": "hi"})), 400, "'messages' must be"),
        case("message-number", post(chat({"messages": [5]})), 400, "messages[0] must be"),
        case("role-number", post(chat({"messages": [{"role": 5}]})), 400, "role must be one of"),
        case(
            "content-number",
            post(chat({"messages": [{"role": "user", "content": 5}]})),
            400,
            "content must be a string",
        ),
        case("stream-string", post(chat({"stream": "yes"})), 400, "'stream' must be a boolean"),
        case("tools-string", post(chat({"tools": "read"})), 400, "'tools' must be a list"),
        case("n-two", post(chat({"n": 2})), 400, "'n' must be 1"),
        case(
            "stream-options",
            post(chat({"stream": True, "stream_options": 5})),
            400,
            "'stream_options' must be an object",
        ),
        case("side-calls-number", post(b'{"patterns": 5}', side_calls), 400, "patterns"),
        # unbounded input is never echoed back whole
        case(
            "huge-role",
            post(chat({"messages": [{"role": HUGE, "content": "hi"}]})),
            400,
            "role must be one of",
        ),
        case(
            "huge-flow-name",
            post(chat({"messages": [{"role": "user", "content": f"[[mock:{HUGE}#k]]"}]})),
            400,
            "Unknown mock flow",
        ),
        case(
            "huge-query-name",
            request("GET", f"/_mock/requests?{'z' * 7000}=1"),
            400,
            "Unknown query parameter",
        ),
        case(
            "huge-side-call",
            post(json.dumps({"patterns": [HUGE]}).encode(), side_calls),
            400,
            "characters long",
        ),
        case("long-unknown-path", request("GET", "/v2/" + "x" * 7000), 404, "Not Found"),
        # deep nesting, bytes and characters
        case("flows-deep", post(b"[" * 100_000, flows), 400, "nests too deeply"),
        case("side-calls-deep", post(b'{"patterns": ' + DEEP + b"}", side_calls), 400, "not JSON"),
        case("invalid-utf8", post(b'{"model": "m\xff"}'), 400, "utf-8"),
        case("flows-invalid-utf8", post(b"flows: \xff", flows), 400, "not UTF-8"),
        case("raw-nul", post(b'{"model": "a\x00"}'), 400, "Invalid control character"),
        # chunked bodies
        case("chunked-invalid-json", chunked(COMPLETIONS, b'{"mo', b"del"), 400, "not valid JSON"),
        case("chunked-no-model", chunked(COMPLETIONS, b"{", b"}"), 400, "model parameter"),
        # unknown paths, absurd query strings
        case("unknown-path", request("GET", "/v1/embeddings/x"), 404, "Not Found"),
        case("unknown-mock-path", request("GET", "/_mock/nope"), 404, "/_mock/nope"),
        case("invalid-utf8-path", request("GET", "/v1/%ff%fe"), 404, "Not Found"),
        case(
            "journal-nul", request("GET", "/_mock/requests?key=k&settle_ms=%00"), 400, "settle_ms"
        ),
        case("query-20kb", request("GET", "/_mock/requests?" + "a=1&" * 5000), 414, "8192 bytes"),
        case("path-10kb", request("GET", "/v1/" + "a" * 10_000), 414, "8192 bytes"),
    ]


def both(id: str, raw: bytes, status: int, says: str) -> list[Case]:
    return [Case(f"{server}-{id}", server, raw, status, says) for server in ("app", "mock")]


def protocol_cases() -> list[Case]:
    """What either server refuses before a route runs (RequestLimits), the same on both."""
    return [
        *both("no-host", request("GET", "/healthz", host=None), 400, "no Host header"),
        *both(
            "two-hosts",
            request("GET", "/healthz", headers=(("Host", "u"),)),
            400,
            "more than one Host",
        ),
        *both("host-with-space", request("GET", "/healthz", host="a b"), 400, "Host header"),
        *both("host-with-markup", request("GET", "/healthz", host="<x>"), 400, "Host header"),
        *both("host-bad-port", request("GET", "/healthz", host="t:http"), 400, "Host header"),
        *both("host-utf8", request("GET", "/healthz", host="caf\xe9"), 400, "Host header"),
    ]


CLOSING_CASES = [
    # uvicorn's parser refuses these, answers 400 and closes the connection
    ("garbage-request-line", b"HELLO WORLD\r\n\r\n"),
    ("tls-client-hello", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 32),
    ("http2-preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
    ("lowercase-method", b"get /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"),
    ("no-leading-slash", b"GET healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"),
    ("http-1-2", b"GET /healthz HTTP/1.2\r\nHost: localhost\r\n\r\n"),
    ("bare-lf", b"GET /healthz HTTP/1.1\nHost: localhost\n\n"),
    ("control-in-host", b"GET /healthz HTTP/1.1\r\nHost: a\x01\r\n\r\n"),
    ("nul-in-header", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: a\x00b\r\n\r\n"),
    ("header-without-colon", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nBroken\r\n\r\n"),
    ("folded-header", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: a\r\n b\r\n\r\n"),
    (
        "length-not-a-number",
        b"POST /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: x\r\n\r\n",
    ),
    ("negative-length", b"POST /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\n\r\n"),
    (
        "two-lengths",
        b"POST /healthz HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    ),
    (
        "length-and-chunked",
        b"POST /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    ),
    (
        "bad-chunk-size",
        b"POST /healthz HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"zz\r\nab\r\n0\r\n\r\n",
    ),
    (
        "unknown-transfer-coding",
        b"POST /healthz HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\nab",
    ),
    ("target-70kb", b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n"),
]


CASES = app_cases() + mock_cases() + protocol_cases()


@pytest.fixture
def urls(notes_app: AppUnderTest, mock_url: str) -> dict[Server, str]:
    return {"app": notes_app.url, "mock": mock_url}


def assert_healthy(url: str) -> None:
    """A new connection is answered: `GET /healthz` is 200."""
    conn = Connection(url)
    try:
        conn.send(HEALTHZ)
        assert conn.answer().status == 200
    finally:
        conn.close()


def assert_says(answer: Answer, says: str) -> None:
    """The refusal is short and holds `says`, in the server's own error shape."""
    assert len(answer.body) <= MAX_ERROR_BODY, answer.text[:300]
    decoded = json.loads(answer.body)
    assert isinstance(decoded, dict)
    assert says in json.dumps(decoded, ensure_ascii=False), answer.text[:500]


def test_each_malformed_request_gets_a_4xx_in_words_and_the_connection_still_serves(
    urls: dict[Server, str],
):
    def refused_in_words(case: Case) -> None:
        conn = Connection(urls[case.server])
        try:
            conn.send(case.raw)
            answer = conn.answer()
            assert answer.status == case.status, answer.text[:500]
            assert_says(answer, case.says)
            if not answer.closes:
                conn.send(HEALTHZ)
                assert conn.answer().status == 200
        finally:
            conn.close()
        assert_healthy(urls[case.server])

    assert check_each(((case.id, case) for case in CASES), refused_in_words) == len(CASES)


def test_bytes_the_http_parser_refuses_get_a_400_and_a_closed_connection(
    urls: dict[Server, str],
):
    def refused_and_closed(case: tuple[Server, bytes]) -> None:
        server, raw = case
        conn = Connection(urls[server])
        try:
            conn.send(raw)
            answer = conn.answer()
            assert (answer.status, answer.text) == (400, UVICORN_400)
            assert answer.closes
        finally:
            conn.close()
        assert_healthy(urls[server])

    cases: list[tuple[str, tuple[Server, bytes]]] = [
        (f"{server}-{name}", (server, raw)) for server in SERVERS for name, raw in CLOSING_CASES
    ]
    assert check_each(cases, refused_and_closed) == 2 * len(CLOSING_CASES)


@pytest.mark.parametrize("server", ["app", "mock"])
def test_a_body_longer_than_its_content_length_gets_only_4xx_answers_and_a_closed_connection(
    urls: dict[Server, str], server: Server
):
    """The bytes past the declared length are read as the next request, which uvicorn's
    parser refuses (400, closing): the answer to the body cut short may not get out first."""
    path = CHAT if server == "app" else COMPLETIONS
    raw = f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    raw += "Content-Length: 5\r\n\r\n"
    conn = Connection(urls[server])
    answers: list[Answer] = []
    try:
        conn.send(raw.encode() + b'{"message": "hi"}')
        while not answers or not answers[-1].closes:
            answers.append(conn.answer())
    finally:
        conn.close()
    assert all(400 <= a.status < 500 for a in answers)
    assert answers[-1].text == UVICORN_400
    assert_healthy(urls[server])


@pytest.mark.parametrize("server", ["app", "mock"])
def test_http_1_0_is_served_and_the_connection_closed_after(
    urls: dict[Server, str], server: Server
):
    conn = Connection(urls[server])
    try:
        conn.send(b"GET /healthz HTTP/1.0\r\n\r\n")
        answer = conn.answer()
        assert answer.status == 200
        assert json.loads(answer.body)["status"] == "ok"
        assert conn.is_closed()
    finally:
        conn.close()


def test_the_app_streams_a_turn_to_an_http_1_0_client_until_it_closes(notes_app: AppUnderTest):
    """No chunked encoding in HTTP/1.0: the body runs to the end of the connection."""
    body = b'{"message": "When do backups run?"}'
    raw = b"POST /api/chat HTTP/1.0\r\nContent-Type: application/json\r\n"
    raw += b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    conn = Connection(notes_app.url)
    try:
        conn.send(raw)
        answer = conn.answer()
    finally:
        conn.close()
    assert answer.status == 200
    frames = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data:")]
    assert frames[-1]["type"] == "done"


async def test_the_mock_reads_a_json_body_whatever_its_content_type_says(mock_url: str):
    """`curl --data-binary` sends application/x-www-form-urlencoded (docs/mock_llm.md)."""
    raw = request("POST", COMPLETIONS, chat({}), "application/x-www-form-urlencoded")
    conn = Connection(mock_url)
    try:
        conn.send(raw)
        answer = conn.answer()
    finally:
        conn.close()
    assert answer.status == 200
    assert json.loads(answer.body)["object"] == "chat.completion"


# --- the mock's request parser: these were 500s -------------------------------------------

MOCK_PARSER_BUGS = [
    pytest.param(post_body, id=id)
    for id, post_body in [
        # json.loads raised ValueError (the int digit limit), not JSONDecodeError
        (
            "n-with-5000-digits",
            b'{"model": "m", "n": ' + DIGITS + b', "messages": [{"role": "user", "content": "x"}]}',
        ),
        (
            "max-tokens-with-5000-digits",
            b'{"model": "m", "max_tokens": ' + DIGITS + b', "messages": [{"role": "user"}]}',
        ),
        # `role not in ROLES` on a list raised TypeError
        ("role-a-list", b'{"model": "m", "messages": [{"role": [1], "content": "x"}]}'),
    ]
]


@pytest.fixture(scope="module")
def own_mock() -> Iterator[str]:
    """A mock of these tests' own: a 500 leaves its journal entry in progress forever, and
    every later settle read on that mock would wait out its timeout."""
    with serve_mock() as url:
        yield url


@pytest.mark.parametrize("body", MOCK_PARSER_BUGS)
def test_the_mock_answers_400_to_a_body_its_request_parser_failed_on(own_mock: str, body: bytes):
    """Regression (issue 12): each of these was a 500 that left its journal entry in
    progress forever."""
    mock_url = own_mock
    conn = Connection(mock_url)
    try:
        conn.send(request("POST", COMPLETIONS, body))
        answer = conn.answer()
    finally:
        conn.close()
    assert answer.status == 400, answer.text[:300]
    assert_healthy(mock_url)
