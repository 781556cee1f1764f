from __future__ import annotations

from pathlib import Path

import pytest

from guardrail.model_profiles import AUTO, ProfileChoice, registry_for
from guardrail.registries import DEFAULT_REGISTRY, OPT_IN, PROFILES, registry_with
from scaffold_guard.app.config import (
    BUNDLED_NOTES,
    SETTINGS,
    SettingsError,
    load_settings,
    settings_table,
)
from scaffold_guard.app.main import llm_config
from scaffold_guard.app.rag.llm import make_client
from servekit.pool import POOL_IDLE_S


def test_no_environment_is_the_embedded_demo():
    settings = load_settings({})
    assert settings.embedded
    assert settings.notes_dir == BUNDLED_NOTES
    assert settings.data_dir == Path("data")
    assert settings.log_file == Path("data/chat.log")
    assert settings.agent_tools is True
    assert settings.grounding_threshold is None


def test_real_llm_settings_are_read(tmp_path: Path):
    settings = load_settings(
        {
            "SG_LLM_BASE_URL": "http://127.0.0.1:8080/v1/",
            "SG_LLM_MODEL": "LFM2-8B",
            "SG_LLM_API_KEY": "k",
            "SG_LLM_TIMEOUT_S": "30",
            "SG_LLM_MAX_ATTEMPTS": "1",
            "SG_AGENT_MAX_ROUNDS": "0",
            "SG_AGENT_TOOLS": "off",
            "SG_NOTES_DIR": str(tmp_path),
            "SG_DATA_DIR": str(tmp_path / "d"),
            "SG_LOG_FILE": str(tmp_path / "chat.log"),
            "SG_GROUNDING_THRESHOLD": "2.5",
        }
    )
    assert not settings.embedded
    assert settings.llm_base_url == "http://127.0.0.1:8080/v1"
    assert (settings.llm_model, settings.llm_timeout_s, settings.llm_max_attempts) == (
        "LFM2-8B",
        30.0,
        1,
    )
    assert (settings.agent_max_rounds, settings.agent_tools) == (0, False)
    assert settings.db_path == tmp_path / "d" / "scaffold-guard.sqlite3"
    assert settings.grounding_threshold == 2.5


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"SG_LLM_BASE_URL": "localhost:8080"}, "must start with http"),
        ({"SG_LLM_TIMEOUT_S": "0"}, "SG_LLM_TIMEOUT_S='0': must be more than 0"),
        ({"SG_LLM_TIMEOUT_S": "soon"}, "SG_LLM_TIMEOUT_S='soon'"),
        ({"SG_LLM_TIMEOUT_S": "inf"}, "finite"),
        ({"SG_LLM_MAX_ATTEMPTS": "0"}, "must be 1 to 10"),
        ({"SG_LLM_MAX_ATTEMPTS": "2.5"}, "whole number"),
        ({"SG_LLM_RETRY_DELAY_S": "-1"}, "0 or more"),
        ({"SG_AGENT_MAX_ROUNDS": "99"}, "must be 0 to 20"),
        ({"SG_AGENT_TOOLS": "maybe"}, "on or off"),
        ({"SG_NOTES_DIR": "/no/such/folder"}, "not a folder"),
        ({"SG_LLM_MODEL": "  "}, "SG_LLM_MODEL must not be empty"),
        ({"SG_GROUNDING_THRESHOLD": "nan"}, "finite"),
        ({"SG_LLM_POOL_IDLE_S": "0"}, "SG_LLM_POOL_IDLE_S='0': must be more than 0"),
        ({"SG_LLM_POOL_IDLE_S": "nan"}, "SG_LLM_POOL_IDLE_S='nan': must be a finite number"),
        ({"SG_ALLOWED_HOSTS": "http://box.lan"}, "'http://box.lan' is not a host name"),
        ({"SG_ALLOWED_ORIGINS": "tool.lan"}, "'tool.lan' is not scheme://host[:port]"),
    ],
)
def test_invalid_setting_stops_the_start_with_a_clear_message(env: dict[str, str], problem: str):
    with pytest.raises(SettingsError, match="invalid settings") as caught:
        load_settings(env)
    assert problem in str(caught.value)


def test_the_pool_idle_time_reaches_the_model_client_and_defaults_to_the_pools():
    url = {"SG_LLM_BASE_URL": "http://127.0.0.1:8080/v1"}
    chosen = make_client(llm_config(load_settings({**url, "SG_LLM_POOL_IDLE_S": "0.75"})))
    default = make_client(llm_config(load_settings(url)))
    assert (chosen.pool.idle_s, default.pool.idle_s) == (0.75, POOL_IDLE_S)


def test_every_problem_is_listed_at_once():
    with pytest.raises(SettingsError) as caught:
        load_settings({"SG_LLM_TIMEOUT_S": "x", "SG_AGENT_TOOLS": "x"})
    assert "SG_LLM_TIMEOUT_S" in str(caught.value)
    assert "SG_AGENT_TOOLS" in str(caught.value)


def test_readme_lists_every_setting():
    readme = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")
    assert settings_table() in readme
    assert len(SETTINGS) == settings_table().count("| `SG_")


def test_scaffold_profiles_default_to_auto_by_the_model_name():
    settings = load_settings({"SG_LLM_MODEL": "qwen3:8b"})
    assert settings.scaffold_profiles == AUTO
    assert settings.scaffold_registry == registry_for("qwen3:8b")
    assert "<tool_call>" in {p.start for p in settings.scaffold_registry}


def test_the_default_model_under_auto_gets_no_look_alike_marker():
    starts = {p.start for p in load_settings({}).scaffold_registry}
    assert "<tool_call>" not in starts
    assert "<|tool_call_start|>" in starts


@pytest.mark.parametrize("value", ["none", ""])
def test_scaffold_profiles_none_is_the_lfm2_registry_alone(value: str):
    settings = load_settings({"SG_SCAFFOLD_PROFILES": value, "SG_LLM_MODEL": "qwen3:8b"})
    assert settings.scaffold_profiles == ProfileChoice(auto=False)
    assert settings.scaffold_registry == DEFAULT_REGISTRY


def test_scaffold_profiles_all_is_every_profile_but_the_opt_in_ones():
    settings = load_settings({"SG_SCAFFOLD_PROFILES": "all"})
    assert settings.scaffold_registry == registry_with(*(p for p in PROFILES if p not in OPT_IN))


def test_scaffold_profiles_add_the_named_opt_in_patterns():
    settings = load_settings({"SG_SCAFFOLD_PROFILES": " hermes, mistral ,hermes"})
    assert settings.scaffold_profiles == ProfileChoice(auto=False, names=("hermes", "mistral"))
    assert settings.scaffold_registry == registry_with("hermes", "mistral")


def test_an_unknown_scaffold_profile_stops_the_start_with_the_known_names():
    with pytest.raises(SettingsError) as caught:
        load_settings({"SG_SCAFFOLD_PROFILES": "hermes,lfm3"})
    message = str(caught.value)
    assert "SG_SCAFFOLD_PROFILES='hermes,lfm3': unknown profile(s) lfm3" in message
    known = "known: auto, none, all, cohere, deepseek, deepseek-xml, echo, function-tag, gemma,"
    assert known in message


def test_allowed_hosts_and_origins_are_read_from_the_environment():
    settings = load_settings(
        {
            "SG_ALLOWED_HOSTS": "notes.lan, .docker.internal",
            "SG_ALLOWED_ORIGINS": "http://a.lan:3000",
        }
    )
    assert settings.allowed_hosts == ("notes.lan", ".docker.internal")
    assert settings.allowed_origins == {"http://a.lan:3000"}
    assert settings.hosts.allows("host.docker.internal:8000")
