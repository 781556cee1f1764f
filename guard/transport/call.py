"""One request through an in-process guard transport: the API it speaks, its body, the
requests it sends upstream, the answers it builds in its library's types, and its log line.

Deliberate choices:
- A guarded request goes upstream asking for an uncompressed answer (`Accept-Encoding:
  identity`) with an `X-Request-Id`; an answer that comes compressed all the same is
  refused with the API's 502 rather than inflated.
- A rewritten body goes without the upstream's Content-Length and Content-Encoding.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from guard.call_log import REQUEST_ID, log_once, request_id
from guard.relay import Answer, Refused, Reply, Tally, Whole
from guard.transport.libraries import Http, http_for
from guard.wire.api import Api
from guard.wire.apis import api_for
from guard.wire.faults import CUT_OFF
from guardrail.model_profiles import ProfileChoice, parse_profiles
from servekit.json_codec import parse_object

log = logging.getLogger("guard.transport")

MAX_REST_BYTES = 64 * 1024
"""The most read of what follows a chat stream's `[DONE]` (its body's end is a few bytes),
for the connection's sake; past it, the connection is closed instead."""
IDENTITY_CODINGS = ("", "identity")
DROPPED_HEADERS = ("content-length", "content-encoding", "transfer-encoding")
"""The upstream's headers a guarded answer goes without: its body is the guard's."""


def profile_choice(profiles: ProfileChoice | str) -> ProfileChoice:
    """A `--profiles` setting (`auto`, a list) or a choice already made."""
    return parse_profiles(profiles) if isinstance(profiles, str) else profiles


@dataclass
class TransportCall:
    """One guarded request: the API it speaks, its body, its upstream requests, its log."""

    api: Api
    request: httpx.Request
    body: dict[str, Any]
    profiles: ProfileChoice
    http: Http
    tally: Tally = field(default_factory=Tally)
    status: int = 0
    cause: str = ""
    started: float = field(default_factory=time.perf_counter)
    logged: bool = False

    def __post_init__(self) -> None:
        headers = self.http.headers(self.request.headers)
        headers[REQUEST_ID] = request_id(headers.get(REQUEST_ID))
        headers["Accept-Encoding"] = "identity"
        for name in ("content-length", "transfer-encoding"):
            headers.pop(name, None)
        self.headers = headers
        self.registry = self.profiles.registry(self.body.get("model"))

    @property
    def streams(self) -> bool:
        return self.api.streams(self.body)

    def upstream_request(self, body: dict[str, Any] | None = None) -> httpx.Request:
        """The request upstream: the client's own bytes, or `body` (the recovery's)."""
        content = self.request.content if body is None else json.dumps(body).encode()
        return self.http.request(
            self.request.method,
            self.request.url,
            headers=self.headers,
            content=content,
            extensions=self.request.extensions,
        )

    def refusal(self, response: httpx.Response, raw: bytes) -> Refused:
        status = response.status_code
        return Refused(status, self.api.refusal_message(raw, status), raw)

    def whole_reply(self, response: httpx.Response, raw: bytes | None) -> Reply:
        """What the whole flow is told of the recovery's answer `raw` (None: cut)."""
        if raw is None:
            return Refused(502, CUT_OFF)
        if response.status_code >= 300:
            return self.refusal(response, raw)
        return Whole(response.status_code, raw)

    def unguardable(self, response: httpx.Response) -> Refused | None:
        """A refusal for an answer compressed though asked for uncompressed, or None."""
        coding = response.headers.get("Content-Encoding", "").strip().lower()
        if coding in IDENTITY_CODINGS:
            return None
        self.cause = "error=Unguardable"
        return Refused(
            502,
            f"The model server answered with Content-Encoding {coding}, though the guard"
            " asked for identity; the guard does not decompress answers.",
        )

    def error(self, status: int, message: str) -> httpx.Response:
        """The API's own error answer."""
        return self.error_answer(status, self.api.error_body(status, message, None))

    def error_answer(self, status: int, body: bytes) -> httpx.Response:
        return self.http.response(
            status, headers={"Content-Type": "application/json"}, content=body
        )

    def answer(self, answer: Answer, upstream: httpx.Response) -> httpx.Response:
        """The client's whole answer: the upstream's headers, with the guard's body."""
        if answer.own:
            return self.error_answer(answer.status, answer.body)
        headers = self.kept(upstream.headers) if answer.changed else upstream.headers
        return self.http.response(answer.status, headers=headers, content=answer.body)

    def stream_response(
        self, upstream: httpx.Response, stream: httpx.AsyncByteStream | httpx.SyncByteStream
    ) -> httpx.Response:
        return self.http.response(
            upstream.status_code,
            headers=self.kept(upstream.headers),
            stream=stream,
            extensions=upstream.extensions,
        )

    def kept(self, headers: httpx.Headers) -> httpx.Headers:
        """The upstream's headers but those of a body the guard rewrote."""
        kept = self.http.headers(headers)
        for name in DROPPED_HEADERS:
            kept.pop(name, None)
        return kept

    def log(self, *, stream: bool) -> None:
        """The request's log line (and its strip warnings), written once."""
        log_once(self, log, stream=stream)

    @property
    def request_id(self) -> str:
        return self.headers[REQUEST_ID]

    def profiles_said(self) -> str:
        return self.profiles.describe(self.body.get("model"))


def guarded(request: httpx.Request, profiles: ProfileChoice) -> TransportCall | None:
    """The guarded call `request` starts, or None when it is not the guard's to judge (an
    API the guard does not guard, a body that is not a JSON object): passed on as it is."""
    api = api_for(request.method, request.url.path)
    if api is None:
        return None
    body = parse_object(request.content)
    return None if body is None else TransportCall(api, request, body, profiles, http_for(request))
