"""What the guard proxy passes on untouched, checked against the mock behind it: the same
request, on its own turn KEY, sent to both, and the two answers compared byte for byte."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx

from ...support.deadlines import DEADLINE_S


async def answer_bytes(url: str, path: str, body: dict[str, Any], ids: re.Pattern[bytes]) -> bytes:
    """The bytes `url` answers a POST of `body` to `path` with, less what `ids` matches (the
    ids and times that differ between any two answers)."""
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        reply = await client.post(f"{url}{path}", json=body)
    return ids.sub(b"", reply.content)


async def assert_passed_on_as_is(
    urls: tuple[str, str],
    path: str,
    body: Callable[[str], dict[str, Any]],
    key: str,
    ids: re.Pattern[bytes],
) -> None:
    """The proxy answers `body(turn)` on `path` as the mock answers it directly, byte for byte
    but for `ids`. `urls` is (the mock's, the proxy's); the two turns' keys are `key` with
    suffixes of the same length, so the usage counts agree."""
    mock_url, proxy_url = urls
    direct = await answer_bytes(mock_url, path, body(f"{key}-a"), ids)
    proxied = await answer_bytes(proxy_url, path, body(f"{key}-b"), ids)
    assert proxied == direct
