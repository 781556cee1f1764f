"""The installed wheel, used from a project of a user's own (scripts/check_wheel.sh runs it).

Run with the interpreter of a virtual environment the wheel was installed into, from a project
folder that has packages of its own named `app` and `integrations` (each with a `NAME`):

    python wheel_smoke.py bare                 a bare install: the filter and the transport
    python wheel_smoke.py served MOCK GUARD    also through the mock and the proxy it served

Both check that the project's own `app` and `integrations` are the ones imported (the wheel
ships none), that the filter strips LFM2's markup, and that `AsyncGuardTransport` strips it
from a scripted chat completion and leaves thinking alone. `bare` also checks that no server
framework came with the install; `served` asks the mock for a leak straight, through the
proxy and through the transport, and checks that only the straight answer shows the markup.
Standalone on purpose (the standard library, httpx and the wheel): no file of the checkout is
importable where it runs. Exits 1 with what failed.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import sys

import httpx

from guard.transport import AsyncGuardTransport
from guardrail.scaffolding import ScaffoldingFilter

MARKUP = "<|tool_call_start|>[read(path='/homelab/backup-notes.md')]<|tool_call_end|>"
ANSWER = "Backups run nightly at 02:00."
SERVER_FRAMEWORKS = ("fastapi", "starlette", "uvicorn", "aiohttp")


def check_own_names() -> None:
    for module in map(importlib.import_module, ("app", "integrations")):
        name: str = getattr(module, "NAME", "")
        assert name.startswith("the project's own"), f"{module.__name__} is {module.__file__}"


def check_filter() -> None:
    stream = ScaffoldingFilter()
    shown = stream.feed(f"{ANSWER} {MARKUP[:9]}") + stream.feed(MARKUP[9:]) + stream.flush()
    assert shown.strip() == ANSWER, shown


def completion(content: str) -> dict[str, object]:
    message = {"role": "assistant", "content": content, "reasoning_content": "Let me look."}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "lfm2-1.2b",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


async def check_transport() -> None:
    def model_server(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=completion(f"{ANSWER} {MARKUP}"))

    transport = AsyncGuardTransport(httpx.MockTransport(model_server))
    async with httpx.AsyncClient(transport=transport) as client:
        body = {"model": "lfm2-1.2b", "messages": [{"role": "user", "content": "backups?"}]}
        reply = await client.post("http://model.invalid/v1/chat/completions", json=body)
    message = reply.json()["choices"][0]["message"]
    assert message["content"].strip() == ANSWER, message
    assert message["reasoning_content"] == "Let me look.", message


def check_bare() -> None:
    present = [name for name in SERVER_FRAMEWORKS if importlib.util.find_spec(name) is not None]
    assert present == [], f"a bare install brought {present}"


async def ask(client: httpx.AsyncClient, base_url: str, key: str) -> str:
    body = {
        "model": "lfm2-1.2b",
        "messages": [{"role": "user", "content": f"backups? [[mock:scaffold-mixed#{key}]]"}],
    }
    reply = await client.post(f"{base_url}/chat/completions", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    content: str = reply.json()["choices"][0]["message"]["content"]
    return content


async def check_served(mock_url: str, guard_url: str) -> None:
    async with httpx.AsyncClient() as plain:
        straight = await ask(plain, f"{mock_url}/v1", "straight")
        proxied = await ask(plain, f"{guard_url}/v1", "proxied")
    async with httpx.AsyncClient(transport=AsyncGuardTransport()) as guarded:
        transported = await ask(guarded, f"{mock_url}/v1", "transported")
    assert "<|tool_call_start|>" in straight, straight
    for way, text in (("the proxy", proxied), ("the transport", transported)):
        assert "<|tool_call_start|>" not in text, f"{way}: {text!r}"
        assert text.strip(), f"{way} showed nothing"


def main(argv: list[str]) -> int:
    try:
        check_own_names()
        check_filter()
        asyncio.run(check_transport())
        if argv[:1] == ["bare"]:
            check_bare()
        elif argv[:1] == ["served"] and len(argv) == 3:
            asyncio.run(check_served(argv[1], argv[2]))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except AssertionError as error:
        print(f"wheel_smoke {' '.join(argv)}: {error}", file=sys.stderr)
        return 1
    print(f"wheel_smoke {argv[0]}: ok", json.dumps(sys.executable))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
