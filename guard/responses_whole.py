"""One whole (not streamed) OpenAI Responses API response through the guardrail. Pure.

`ResponseGuard.filter(response)` filters the text of every `output_text` part of every
`message` item in `response["output"]` in place, each as one whole stream
(`guardrail.policy.RoundFilter`), and says whether anything changed, so an untouched
response can go out as the upstream's own bytes. Reasoning items, function calls and every
other item are left alone (G9, G12). A reply with no tool call whose visible text is empty
because something was stripped gets the one recovery (`wants_recovery`, `guard.reply`); the
recovery's response goes through a ResponseGuard made with `follows=` the first, which says
whether it stayed empty (`malformed`, G3).

Deliberate choices:
- A top-level `output_text` (the API leaves it to the SDK to compute; some servers send it)
  becomes the filtered parts joined, as the SDK would compute it, when it was the parts
  joined; any other string there is scrubbed on its own, uncounted (its markup was counted
  in the parts, or is not the reply's).
- The recovery's response keeps its own id: a whole answer has shown the client no other,
  and that id names the response that holds the answer (a server that stores responses
  continues from it on `previous_response_id`). A stream cannot do that (see
  guard.responses_stream).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guard.reply import WholeReply
from guard.responses_api import (
    is_tool_call,
    objects,
    output_text_of,
    rewrite_output_text,
    rewrite_texts,
)


@dataclass
class ResponseGuard(WholeReply):
    def filter(self, response: dict[str, Any]) -> bool:
        """Filter `response`'s answer texts in place; whether anything changed."""
        output = response.get("output")
        if any(is_tool_call(item) for _, item in objects(output)):
            self.tool_calls = True
        joined = output_text_of(output)
        changed = rewrite_texts(output, lambda _p, _i, _c, text: self.whole(text))
        return rewrite_output_text(response, joined, self.registry) or changed
