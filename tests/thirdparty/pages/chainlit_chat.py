"""A chat page as Chainlit's streaming guide writes it (docs.chainlit.io/advanced-features/
streaming, its OpenAI example: `@cl.on_message` streams the SDK's `delta.content` into
`cl.Message.stream_token`), with the one line that puts the guard in: the
OpenAI client's `http_client`. SG_MODEL_URL is the model server's base URL (the mock's).
Run by tests/thirdparty/framework_pages.py with Chainlit's own `chainlit run`, in a venv of its
own where the built wheel is installed as a user installs it: `pip install scaffold-guard`.

One addition the guide does not make: the `except` that shows a failed turn as a
`cl.ErrorMessage`. Chainlit logs an exception raised in an `on_message` handler and shows the
user nothing (its handler is wrapped without a task), so a turn whose request failed would
leave the page as it was: no page can show the guard's error that way
(docs/transport.md)."""

import os

import chainlit as cl
import httpx
from openai import AsyncOpenAI

from guard.transport import AsyncGuardTransport

client = AsyncOpenAI(
    base_url=os.environ["SG_MODEL_URL"],
    api_key="not-needed",
    http_client=httpx.AsyncClient(transport=AsyncGuardTransport()),  # the one line
)
settings = {"model": os.environ.get("SG_MODEL", "lfm2-1.2b")}


@cl.on_chat_start
def start_chat():
    cl.user_session.set(
        "message_history",
        [{"role": "system", "content": "You are a helpful assistant."}],
    )


@cl.on_message
async def main(message: cl.Message):
    message_history = cl.user_session.get("message_history")
    message_history.append({"role": "user", "content": message.content})

    msg = cl.Message(content="")
    try:
        stream = await client.chat.completions.create(
            messages=message_history, stream=True, **settings
        )
        async for part in stream:
            if token := part.choices[0].delta.content or "":
                await msg.stream_token(token)
    except Exception as error:  # the addition (see the module docstring)
        await cl.ErrorMessage(content=str(error)).send()
        return

    message_history.append({"role": "assistant", "content": msg.content})
    await msg.update()
