"""A chat page as Gradio's guide "Creating A Chatbot Fast" writes it for an OpenAI-compatible
server (a `gr.ChatInterface` whose function streams the SDK's `delta.content`), with the one
line that puts the guard in: the OpenAI client's `http_client`. SG_MODEL_URL is the model
server's base URL (the mock's); the port to serve on is its argument. Run by
tests/thirdparty/framework_pages.py in a venv of its own, the built wheel installed as a user
installs it."""

import os
import sys

import gradio as gr
import httpx
from openai import OpenAI

from guard.transport import GuardTransport

client = OpenAI(
    base_url=os.environ["SG_MODEL_URL"],
    api_key="not-needed",
    http_client=httpx.Client(transport=GuardTransport()),  # the one line
)


def text_of(content):
    """A history message's text (Gradio gives it as a string or as a list of parts)."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def predict(message, history):
    messages = [{"role": m["role"], "content": text_of(m["content"])} for m in history]
    messages.append({"role": "user", "content": message})
    stream = client.chat.completions.create(
        model=os.environ.get("SG_MODEL", "lfm2-1.2b"), messages=messages, stream=True
    )
    partial = ""
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            partial += chunk.choices[0].delta.content
            yield partial


demo = gr.ChatInterface(predict)

if __name__ == "__main__":
    demo.launch(server_name="127.0.0.1", server_port=int(sys.argv[1]))
