"""A chat page as Streamlit's tutorial "Build a basic LLM chat app" writes it
(docs.streamlit.io, "Build a ChatGPT-like app"), with the one line that puts the guard in: the
OpenAI client's `http_client`. SG_MODEL_URL is the model server's base URL (the mock's).
Run by tests/thirdparty/framework_pages.py with Streamlit's own `streamlit run`, in a venv of
its own where the built wheel is installed as a user installs it: `pip install scaffold-guard`."""

import os

import httpx
import streamlit as st
from openai import OpenAI

from guard.transport import GuardTransport

st.title("ChatGPT-like clone")

client = OpenAI(
    base_url=os.environ["SG_MODEL_URL"],
    api_key="not-needed",
    http_client=httpx.Client(transport=GuardTransport()),  # the one line
)

if "openai_model" not in st.session_state:
    st.session_state["openai_model"] = os.environ.get("SG_MODEL", "lfm2-1.2b")

if "messages" not in st.session_state:
    st.session_state.messages = []

for message in st.session_state.messages:
    with st.chat_message(message["role"]):
        st.markdown(message["content"])

if prompt := st.chat_input("What is up?"):
    st.session_state.messages.append({"role": "user", "content": prompt})
    with st.chat_message("user"):
        st.markdown(prompt)

    with st.chat_message("assistant"):
        stream = client.chat.completions.create(
            model=st.session_state["openai_model"],
            messages=[
                {"role": m["role"], "content": m["content"]} for m in st.session_state.messages
            ],
            stream=True,
        )
        response = st.write_stream(stream)
    st.session_state.messages.append({"role": "assistant", "content": response})
