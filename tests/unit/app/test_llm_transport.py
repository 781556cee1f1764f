"""scaffold_guard.app.rag.llm.transport's client and settings as made, before any request: timeouts,
the endpoint, the key and the proxy, and the settings it refuses. No network."""

from __future__ import annotations

import math
from typing import Any

import pytest

from scaffold_guard.app.rag.llm import LLMConfig, make_client

MODEL = "lfm2-test"


def test_make_client_sets_the_connect_and_read_timeouts_and_the_endpoint() -> None:
    config = LLMConfig(
        base_url="http://127.0.0.1:1/v1/", model=MODEL, timeout_s=30, connect_timeout_s=3
    )
    client = make_client(config)

    assert (client.timeout.sock_connect, client.timeout.sock_read) == (3, 30)
    assert client.timeout.total is None  # the overall budget is chat_stream_retried's
    assert client.url == "http://127.0.0.1:1/v1/chat/completions"


def test_make_client_sends_the_configured_key_and_never_an_environment_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-environment")
    without = make_client(LLMConfig(base_url="http://127.0.0.1:1/v1", model=MODEL))
    keyed = make_client(LLMConfig(base_url="http://127.0.0.1:1/v1", model=MODEL, api_key="k"))

    assert "Authorization" not in without.headers
    assert keyed.headers["Authorization"] == "Bearer k"


def test_make_client_reads_the_proxy_from_the_environment_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "localhost")
    proxied = make_client(LLMConfig(base_url="http://models.invalid/v1", model=MODEL))
    bypassed = make_client(LLMConfig(base_url="http://localhost:1/v1", model=MODEL))

    assert str(proxied.proxy) == "http://proxy.invalid:3128"
    assert bypassed.proxy is None


def test_config_repr_never_shows_the_api_key() -> None:
    assert "sk-secret" not in repr(
        LLMConfig(base_url="http://x/v1", model=MODEL, api_key="sk-secret")
    )


@pytest.mark.parametrize(
    "overrides",
    [
        {"max_attempts": 0},
        {"timeout_s": 0},
        {"timeout_s": math.inf},
        {"connect_timeout_s": -1},
        {"retry_after_cap_s": math.nan},
        {"retry_base_delay_s": -0.5},
        {"max_reply_bytes": 0},
        {"max_reply_chars": 0},
    ],
)
def test_config_rejects_unusable_numbers(overrides: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be"):
        LLMConfig(base_url="http://x/v1", model=MODEL, **overrides)
