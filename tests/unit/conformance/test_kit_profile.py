"""The conformance kit's profile files: what each key sets, and a clear error for every bad one."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conformance.profiles.builtin import built_in_profiles
from conformance.profiles.keys import ProfileError
from conformance.profiles.loader import MAX_SIDE_CALL_RULES, load_profile, resolve_profile
from conformance.profiles.model import DEFAULT_PROFILE, HttpStep, LogSpec, SetupStep


def profile_file(tmp_path: Path, text: str, name: str = "my-chat.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def refused(tmp_path: Path, text: str) -> str:
    with pytest.raises(ProfileError) as caught:
        load_profile(profile_file(tmp_path, text))
    return str(caught.value)


def test_the_default_profile_is_the_reference_page_with_every_capability():
    assert DEFAULT_PROFILE.selectors.input == "[data-testid=chat-input]"
    assert DEFAULT_PROFILE.done.attribute == "data-state"
    assert all(DEFAULT_PROFILE.has(c) for c in ("thinking", "stop", "log", "tools"))
    assert DEFAULT_PROFILE.side_calls == ()


def test_an_empty_file_is_the_default_page_with_no_optional_capability(tmp_path: Path):
    profile = load_profile(profile_file(tmp_path, ""))
    assert profile.selectors == DEFAULT_PROFILE.selectors
    assert profile.capabilities == frozenset()
    assert profile.name == "my-chat"
    assert profile.source == str(tmp_path / "my-chat.toml")


def test_every_documented_key_is_read(tmp_path: Path):
    (tmp_path / "signed-in.json").write_text("{}", encoding="utf-8")
    profile = load_profile(
        profile_file(
            tmp_path,
            """
            name = "other-chat"
            [selectors]
            input = "div[contenteditable]"
            send = "button.send"
            message = ".msg.assistant"
            answer = ".content"
            error = ".error"
            stop = "button.stop"
            thinking = "details"
            [input]
            send_with = "enter"
            [done]
            attribute = ""
            appears = ".copy"
            quiet_ms = 900
            [[setup]]
            click_if_visible = "button.welcome"
            within_ms = 2000
            [[setup]]
            select = "select#model"
            option = "mock"
            [[setup]]
            fill = "input#name"
            text = "kit"
            [[setup]]
            wait_for = ".ready"
            [session]
            storage_state = "signed-in.json"
            [capabilities]
            stop = true
            log = true
            [log]
            turn_id_header = "X-Request-Id"
            turn_id_frame = '"turn":"([^"]+)"'
            line = 'req={turn_id} .* scaffold_stripped=(\\d+)$'
            [model_calls]
            side_calls = ["(?i)generate a title"]
            """,
        )
    )
    assert profile.name == "other-chat"
    assert profile.selectors.input == "div[contenteditable]"
    assert profile.selectors.thinking == "details"
    assert profile.send_with == "enter"
    assert (profile.done.attribute, profile.done.appears, profile.done.quiet_ms) == (
        None,
        ".copy",
        900,
    )
    assert profile.setup == (
        SetupStep("click_if_visible", "button.welcome", within_ms=2000),
        SetupStep("select", "select#model", "mock"),
        SetupStep("fill", "input#name", "kit"),
        SetupStep("wait_for", ".ready"),
    )
    assert profile.storage_state == (tmp_path / "signed-in.json").resolve()
    assert profile.capabilities == frozenset({"stop", "log"})
    assert profile.log.turn_id_header == "X-Request-Id"
    frame = profile.log.frame_pattern()
    assert frame is not None
    assert frame.search('["delta", {"turn":"t-7"}]')[1] == "t-7"  # type: ignore[index]
    assert profile.side_calls == ("(?i)generate a title",)


def test_once_per_run_steps_are_page_steps_or_http_requests(tmp_path: Path):
    profile = load_profile(
        profile_file(
            tmp_path,
            """
            [[setup_once]]
            click_if_visible = "button.tour"
            [[setup_once]]
            http = "post /api/settings"
            headers = { Authorization = "Bearer {local_storage:token}" }
            json = { ui = { expandDetails = true } }
            [[setup_once]]
            http = "PUT http://127.0.0.1:9/flags"
            body = "on"
            """,
        )
    )
    assert profile.setup_once == (
        SetupStep("click_if_visible", "button.tour"),
        HttpStep(
            "POST",
            "/api/settings",
            (("Authorization", "Bearer {local_storage:token}"),),
            {"ui": {"expandDetails": True}},
        ),
        HttpStep("PUT", "http://127.0.0.1:9/flags", body="on"),
    )
    assert profile.setup == ()


def test_the_log_pattern_finds_the_turn_by_its_id_or_any_turn_without_one():
    spec = LogSpec(line=r"turn={turn_id} .* scaffold_stripped=(\d+)$")
    line = "chat turn=ab.c1 mode=grounded total_ms=3 retries=0 scaffold_stripped=97"
    assert spec.pattern("ab.c1").search(line)[1] == "97"  # type: ignore[index]
    assert spec.pattern("abXc1").search(line) is None  # the id is matched literally
    assert spec.pattern(None).search(line)[1] == "97"  # type: ignore[index]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("colour = 1", "unknown key colour"),
        ("[selectors]\nbutton = 'x'", "unknown key selectors.button"),
        ("[done]\nwhen = 'x'", "unknown key done.when"),
        ("selectors = 3", "[selectors] must be a table"),
        ("[selectors]\ninput = ''", "selectors.input must be a non-empty string"),
        ("[selectors]\ninput = 3", "selectors.input must be a non-empty string"),
        ("[selectors]\nsend = ''", "selectors.send must be a non-empty string"),
        ("[input]\nsend_with = 'voice'", "input.send_with must be one of click, enter"),
        ("[done]\nquiet_ms = 0", "done.quiet_ms must be a whole number of ms"),
        ("[done]\nquiet_ms = true", "done.quiet_ms must be a whole number of ms"),
        ("[capabilities]\nstop = 'yes'", "capabilities.stop must be true or false"),
        ("[capabilities]\nvoice = true", "unknown key capabilities.voice"),
        ("[log]\nline = '(unclosed'", "log.line is not a valid regex"),
        ("setup = 'click'", "setup must be a list"),
        ("[[setup]]\nclick = 'a'\nwait_for = 'b'", "setup[0] must name exactly one action"),
        ("[[setup]]\nhover = 'a'", "setup[0] must name exactly one action"),
        ("[[setup]]\nselect = 'select'", "setup[0].option must be a string"),
        ("[[setup]]\nclick = 'a'\ntext = 'b'", "unknown key setup[0].text"),
        ("[[setup]]\nclick = 'a'\nwithin_ms = 5", "unknown key setup[0].within_ms"),
        ("[[setup]]\nclick_if_visible = 'a'\nwithin_ms = -1", "setup[0].within_ms must be"),
        ("[log]\nturn_id_frame = 'turn'", "log.turn_id_frame needs a group"),
        ("[log]\nturn_id_frame = '(x'", "log.turn_id_frame is not a valid regex"),
        ("[session]\nstorage_state = 'missing.json'", "is not a file"),
        ("[model_calls]\nside_calls = 'title'", "model_calls.side_calls must be a list"),
        ("[model_calls]\nside_calls = ['']", "model_calls.side_calls[0] must be a non-empty"),
        ("name = [", "not valid TOML"),
        ("setup_once = 3", "setup_once must be a list"),
        ("[[setup_once]]\nhover = 'a'", "setup_once[0] must name exactly one action"),
        ("[[setup]]\nhttp = 'GET /'", "setup[0] must name exactly one action"),
        ("[[setup_once]]\nhttp = '/api/x'", "setup_once[0].http must be METHOD URL"),
        ("[[setup_once]]\nhttp = 'FETCH /api/x'", "setup_once[0].http must be METHOD URL"),
        ("[[setup_once]]\nhttp = 'POST'", "setup_once[0].http must be METHOD URL"),
        ("[[setup_once]]\nhttp = 'POST /a'\nheaders = { A = 1 }", "headers must be a table"),
        ("[[setup_once]]\nhttp = 'POST /a'\nbody = 'x'\njson = 1", "json or body, not both"),
        ("[[setup_once]]\nhttp = 'POST /a'\nbody = 3", "setup_once[0].body must be a string"),
        ("[[setup_once]]\nhttp = 'POST /a'\ntimeout = 3", "unknown key setup_once[0].timeout"),
    ],
)
def test_a_bad_key_is_refused_naming_the_file_and_the_key(tmp_path: Path, text: str, says: str):
    message = refused(tmp_path, text)
    assert message.startswith(str(tmp_path / "my-chat.toml"))
    assert says in message


def test_more_side_call_rules_than_the_mock_takes_are_refused(tmp_path: Path):
    rules = ", ".join(f"'rule{i}'" for i in range(MAX_SIDE_CALL_RULES + 1))
    assert "at most 32" in refused(tmp_path, f"[model_calls]\nside_calls = [{rules}]")


def test_a_missing_or_unreadable_file_is_refused(tmp_path: Path):
    with pytest.raises(ProfileError, match="cannot read the profile"):
        load_profile(tmp_path / "nope.toml")
    (tmp_path / "latin1.toml").write_bytes(b'name = "caf\xe9"')
    with pytest.raises(ProfileError, match="not valid TOML"):
        load_profile(tmp_path / "latin1.toml")


def test_the_kit_ships_a_profile_for_open_webui():
    assert "openwebui" in built_in_profiles()


def test_a_built_in_profile_is_taken_by_its_name():
    profile = resolve_profile("openwebui")
    assert profile.name == "openwebui"
    assert profile.source == "built-in (openwebui)"
    assert profile.selectors.input == "#chat-input"
    assert profile.send_with == "enter"
    assert profile.done.attribute is None
    assert profile.done.appears == ".buttons button"
    assert profile.side_calls == ("^### Task:",)
    assert profile.capabilities == frozenset({"thinking", "stop"})


def test_a_file_of_a_built_in_profiles_name_is_still_a_file(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "openwebui").write_text('name = "mine"', encoding="utf-8")
    assert resolve_profile("openwebui").name == "mine"


def test_an_unknown_name_is_refused_with_the_built_in_profiles_listed(tmp_path: Path):
    with pytest.raises(ProfileError, match=r"built-in profiles: openwebui"):
        resolve_profile(str(tmp_path / "open-webui"))
