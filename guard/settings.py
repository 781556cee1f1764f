"""The guard proxy's settings, shared by its two servers (guard/http and guard/bare). Pure.

Kept apart from either server so that the bare install's server (no server framework, no
aiohttp) reads the same settings the full proxy does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guardrail.model_profiles import AUTO, ProfileChoice
from guardrail.patterns import Registry
from servekit.allowed_hosts import HostPolicy
from servekit.keep_alive import POOL_IDLE_S
from servekit.request_head import LOCAL_ONLY
from servekit.sse import DEFAULT_MAX_LINE_BYTES

__all__ = ["MAX_ANSWER_BYTES", "MAX_BODY_BYTES", "GuardSettings"]

MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""The most of a whole (not streamed) upstream answer the guard reads: a model's answer is
kilobytes, and a larger body is a fault answered with a 502, never held whole in memory."""
MAX_BODY_BYTES = 32 * 1024 * 1024
"""The largest request body (a long conversation with images as data URLs fits)."""


@dataclass(frozen=True)
class GuardSettings:
    upstream: str  # the model server's base URL, e.g. http://127.0.0.1:8080 (no /v1)
    profiles: ProfileChoice = AUTO  # `auto`: the registry follows each request's model name
    connect_timeout_s: float = 10.0
    keepalive_s: float = 15.0  # a `: keep-alive` comment after this long without a byte
    pool_idle_s: float = POOL_IDLE_S  # how long an idle upstream connection is kept for reuse
    max_answer_bytes: int = MAX_ANSWER_BYTES  # a whole answer past it is a 502
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES  # a stream's line or event past it ends it
    hosts: HostPolicy = LOCAL_ONLY  # the Host names the proxy answers to (DNS rebinding)

    def registry_for(self, body: dict[str, Any]) -> Registry:
        """What the guardrail strips from the answer to `body` (its `model` under auto)."""
        return self.profiles.registry(body.get("model"))
