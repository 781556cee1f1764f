"""The guard in-process: httpx transports that apply what the guard proxy applies.

    client = openai.AsyncOpenAI(
        base_url=..., http_client=httpx2.AsyncClient(transport=AsyncGuardTransport())
    )

(httpx2 is the httpx fork the openai and anthropic SDKs type their clients with; a plain
`httpx.AsyncClient` takes the same transport, as the ollama client's does.)

`AsyncGuardTransport` and `GuardTransport` wrap any httpx transport (a default one when
none is given). A request to an API the guard guards (`guard.wire.apis`: chat completions,
the Responses API, Anthropic's Messages, Ollama's chat and generate; streamed or whole)
goes through the wrapped transport and its answer comes back through `guard.relay`'s flow
and the proxy's own reply guards: markup filtered by the registry for the request's model name
(`auto`, or the `profiles` given), reasoning and tool calls untouched, the one recovery as
a second request through the wrapped transport, the malformed reply as the API's own error
(so the SDK raises its usual exception). Each guarded request logs its line on the
`guard.transport` logger (`scaffold_stripped=N`, guard/call_log.py), and a warning with
the first stripped span for each reply that had markup. Anything else passes through
untouched.

Deliberate choices:
- A guarded request goes upstream asking for an uncompressed answer; one that comes
  compressed all the same is refused with the API's 502 rather than inflated.
- The transports only do I/O: every decision is the flow's, so they keep no state
  between requests and are safe to share.
- Importing them loads no server framework and nothing of the mock (a bare install has
  the guardrail, the guard's pure wire code and httpx).
- An upstream error status is passed on as it is, so the SDK's own retry rules apply.
"""

from guard.transport.async_transport import AsyncGuardTransport
from guard.transport.sync_transport import GuardTransport

__all__ = ["AsyncGuardTransport", "GuardTransport"]
