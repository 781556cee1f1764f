"""Drive the notes app over real HTTP: post a question, collect its SSE frames."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

DEADLINE_S = 20.0


@dataclass
class Turn:
    status: int
    headers: httpx.Headers
    frames: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f["type"] == kind]

    @property
    def text(self) -> str:
        return "".join(f["text"] for f in self.of("delta"))

    @property
    def turn_id(self) -> str:
        return self.headers["x-turn-id"]

    @property
    def last(self) -> dict[str, Any]:
        return self.frames[-1]


async def ask(client: httpx.AsyncClient, message: str) -> Turn:
    async with (
        asyncio.timeout(DEADLINE_S),
        client.stream("POST", "/api/chat", json={"message": message}) as response,
    ):
        turn = Turn(response.status_code, response.headers)
        if response.status_code != 200:
            await response.aread()
            turn.frames.append(response.json())
            return turn
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                turn.frames.append(json.loads(line[len("data: ") :]))
            else:
                assert line == "", f"unexpected SSE line {line!r}"
    return turn
