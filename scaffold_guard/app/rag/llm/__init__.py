"""The app's LLM client: one streaming chat request over aiohttp, and one retry layer.

`chat_stream` makes one streaming request and turns its chunks into the shared value types:
`StreamPiece`s for thinking and answer text as they arrive, then exactly one `RoundEnd` with
the tool calls materialized; `chat_stream_retried` wraps it in the only retry loop there
is. Every failure is an `LLMError` whose `message` is plain copy safe to show a user.

- `scaffold_guard.app.rag.llm.transport`: the model server as the app reaches it (`LLMConfig`,
  `UpstreamClient`, `chat_stream`): the request, its pooled connection, its deadline;
- `scaffold_guard.app.rag.llm.chunks`: one stream's chunks read into pieces and a round's end
  (pure);
- `scaffold_guard.app.rag.llm.errors`: a failure as an `LLMError` with its copy (pure);
- `scaffold_guard.app.rag.llm.retry`: which failures are retried, after how long
  (`retry_delay`), and the loop (`chat_stream_retried`).
"""

from scaffold_guard.app.rag.llm.errors import parse_retry_after
from scaffold_guard.app.rag.llm.retry import chat_stream_retried, retry_delay
from scaffold_guard.app.rag.llm.transport import LLMConfig, UpstreamClient, chat_stream, make_client

__all__ = [
    "LLMConfig",
    "UpstreamClient",
    "chat_stream",
    "chat_stream_retried",
    "make_client",
    "parse_retry_after",
    "retry_delay",
]
