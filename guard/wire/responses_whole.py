"""One whole (not streamed) OpenAI Responses API response through the guardrail. Pure.

`ResponseGuard.filter(response)` filters every `message` item's `output_text` parts in
place and says whether anything changed, so an untouched response goes out as the
upstream's bytes; other items pass untouched (G9, G12). A markup-only reply wants the one
recovery, whose guard (`follows=`) says whether it stayed empty (G3).

Deliberate choices:
- A top-level `output_text` that was the parts joined becomes the filtered parts joined,
  as the SDK computes it; any other string there is scrubbed on its own, uncounted.
- The recovery's response keeps its own id: the client has seen no other, and a server
  that stores responses continues from that id. A stream cannot (guard.wire.responses_stream).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guard.wire.reply import WholeReply
from guard.wire.responses_api import (
    is_tool_call,
    output_text_of,
    reasoning_item,
    rewrite_output_text,
    rewrite_texts,
    with_items_after,
)
from guardrail.json_shapes import is_array, objects


@dataclass
class ResponseGuard(WholeReply):
    def filter(self, response: dict[str, Any]) -> bool:
        """Filter `response`'s answer texts in place; whether anything changed."""
        output = response.get("output")
        if any(is_tool_call(item) for item in objects(output)):
            self.tool_calls = True
        joined = output_text_of(output)
        thoughts: dict[int, str] = {}

        def shown(position: int, _item: object, _index: int, text: str) -> str:
            text, thought = self.whole_parts(text)
            if thought:
                thoughts[position] = thoughts.get(position, "") + thought
            return text

        changed = rewrite_texts(output, shown)
        if thoughts and is_array(output):
            response["output"] = with_items_after(
                output,
                lambda p, item: (
                    reasoning_item(item.get("id"), thoughts[p]) if p in thoughts else None
                ),
            )
            changed = True
        return rewrite_output_text(response, joined, self.registry) or changed
