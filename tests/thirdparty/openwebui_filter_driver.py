"""Run inside Open WebUI's own venv: our pasteable filter through Open WebUI's own code.

`python openwebui_filter_driver.py SPEC.json OUT.json` (the venv's python, with DATA_DIR and
the rest of Open WebUI's environment set by the caller, tests/thirdparty/
test_openwebui_filter_real.py) writes one JSON object to OUT.json (Open WebUI prints its
migrations and logs on stdout): what Open WebUI made of each turn. Nothing of scaffold-guard is
importable here, as in a user's Open WebUI: the filter file is all there is of ours.

Per run, once: importing open_webui.config migrates a fresh database in DATA_DIR; the file
goes in through the admin page's own handler (routers.functions.create_new_function: the
frontmatter read, the module loaded by `load_function_module_by_id`, the row written), and
is switched on and made global by the page's own toggles.

Per turn: the mock's stream (chat completions SSE, or Ollama's NDJSON converted by Open
WebUI's `convert_streaming_response_ollama_to_openai`, as its Ollama route does) is read
with Open WebUI's own line splitter and handed, as the StreamingResponse its routers
return, to `middleware.streaming_chat_response_handler`: the code that runs the `stream`
filters per event, builds the message's `output` items, emits what the page receives, and
calls `outlet_filter_handler` at the end. The driver records every event emitted to the
page, the final output, the content Open WebUI would save, and the outlet's messages.

A turn with `"stream": false` asks for a whole answer and goes through
`non_streaming_chat_response_handler` instead, which shows it and then runs the outlet.

SPEC: {"filter": path, "mock": base URL, "turns": [{"name", "route": "openai"|"ollama",
"message", "stream"}], "valves": {...}}. Stdlib and Open WebUI's dependencies only.
"""

# pyright: reportMissingImports=false
# (open_webui is installed in its own venv, where this runs; not in the project's)

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

FUNCTION_ID = "scaffold_guard"
MODEL_ID = "lfm2-test"


async def install(request: Any, admin: Any, source: str, valves: dict[str, Any]) -> dict[str, Any]:
    from open_webui.models.functions import FunctionForm, FunctionMeta
    from open_webui.routers import functions

    form = FunctionForm(
        id=FUNCTION_ID, name="Scaffold Guard", content=source, meta=FunctionMeta(description="")
    )
    created = await functions.create_new_function(request, form, user=admin, db=None)
    await functions.toggle_function_by_id(request, FUNCTION_ID, user=admin, db=None)
    await functions.toggle_global_by_id(request, FUNCTION_ID, user=admin, db=None)
    if valves:
        await functions.update_function_valves_by_id(
            request, FUNCTION_ID, valves, user=admin, db=None
        )
    return {"type": created.type, "manifest": created.meta.manifest}


async def upstream(route: str, mock: str, message: str, stream: bool, model: str) -> Any:
    """The mock's answer as Open WebUI's router hands it on: a StreamingResponse of lines
    (Ollama's converted to chat completion chunks), or a whole answer's dict."""
    import aiohttp
    from open_webui.utils.misc import stream_chunks_handler
    from open_webui.utils.response import (
        convert_response_ollama_to_openai,
        convert_streaming_response_ollama_to_openai,
    )
    from starlette.responses import StreamingResponse

    session = aiohttp.ClientSession()
    body = {"model": model, "stream": stream, "messages": [{"role": "user", "content": message}]}
    path = "/v1/chat/completions" if route == "openai" else "/api/chat"
    response = await session.post(mock + path, json=body)
    if not stream:
        try:
            answer = await response.json(content_type=None)
        finally:
            response.close()
            await session.close()
        return answer if route == "openai" else convert_response_ollama_to_openai(answer)

    async def lines():
        try:
            async for line in stream_chunks_handler(response.content):
                yield line
        finally:
            response.close()
            await session.close()

    if route == "openai":
        return StreamingResponse(lines(), media_type="text/event-stream")
    ollama = StreamingResponse(lines(), media_type="application/x-ndjson")
    return StreamingResponse(
        convert_streaming_response_ollama_to_openai(ollama), media_type="text/event-stream"
    )


async def turn(
    request: Any, user: Any, spec: dict[str, Any], case: dict[str, Any]
) -> dict[str, Any]:
    from open_webui.utils.middleware import (
        non_streaming_chat_response_handler,
        streaming_chat_response_handler,
    )

    emitted: list[dict[str, Any]] = []

    async def event_emitter(event: dict[str, Any]) -> None:
        emitted.append(json.loads(json.dumps(event, default=str)))

    message_id = str(uuid.uuid4())
    messages = [{"role": "user", "content": case["message"]}]
    model_id = case.get("model", MODEL_ID)
    model = {"id": model_id, "name": model_id, "owned_by": case["route"], "info": {"meta": {}}}
    ctx: dict[str, Any] = {
        "request": request,
        "form_data": {"model": model_id, "messages": messages, "stream": True},
        "user": user,
        "model": model,
        "metadata": {
            "chat_id": f"local:{uuid.uuid4()}",  # a temporary chat: nothing saved, no side calls
            "message_id": message_id,
            "session_id": "driver",
            "user_id": user.id,
            "filter_ids": [],
            "params": {},
            "features": {},
        },
        "events": [],
        "event_emitter": event_emitter,
        "event_caller": None,
        "tasks": {},
    }
    stream = case.get("stream", True)
    ctx["form_data"]["stream"] = stream
    response = await upstream(case["route"], spec["mock"], case["message"], stream, model_id)
    started = time.monotonic()
    if stream:
        await streaming_chat_response_handler(response, ctx)
    else:
        await non_streaming_chat_response_handler(response, ctx)
    final = [
        e["data"] for e in emitted if e.get("type") == "chat:completion" and e["data"].get("done")
    ]
    outlet = [e["data"]["messages"] for e in emitted if e.get("type") == "chat:outlet"]
    return {
        "name": case["name"],
        "route": case["route"],
        "model": model_id,
        "stream": stream,
        "emitted": emitted,
        "output": final[-1]["output"] if final else None,
        "saved_content": ctx.get("assistant_message", {}).get("content"),
        "outlet_messages": outlet[-1] if outlet else None,
        "seconds": round(time.monotonic() - started, 3),
    }


async def main(spec: dict[str, Any]) -> dict[str, Any]:
    importlib.import_module("open_webui.config")  # migrates the fresh database in DATA_DIR
    from open_webui.models.users import UserModel

    now = int(time.time())
    admin = UserModel(
        id="driver-admin", name="Driver", email="driver@localhost", role="admin",
        profile_image_url="", last_active_at=now, updated_at=now, created_at=now,
    )  # fmt: skip
    state = SimpleNamespace(redis=None, MODELS={}, config=SimpleNamespace())
    request = SimpleNamespace(
        app=SimpleNamespace(state=state), state=SimpleNamespace(), cookies={}, headers={}
    )
    installed = await install(request, admin, spec["source"], spec.get("valves") or {})
    turns = [await turn(request, admin, spec, case) for case in spec["turns"]]
    return {"installed": installed, "turns": turns}


if __name__ == "__main__":
    os.environ["FROM_INIT_PY"] = "true"  # as `open-webui serve` sets it: the packaged layout
    given = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    given["source"] = Path(given["filter"]).read_text(encoding="utf-8")
    result = asyncio.run(main(given))
    Path(sys.argv[2]).write_text(json.dumps(result), encoding="utf-8")
