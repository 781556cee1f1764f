"""The profile keys that say which assistant message is a turn's: `[turn] find` and
`selectors.user_message`, read and validated at load."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.profiles.keys import ProfileError
from conformance.profiles.loader import load_profile
from conformance.profiles.model import DEFAULT_PROFILE, TURN_FINDS


def loaded(tmp_path: Path, text: str):
    path = tmp_path / "my-chat.toml"
    path.write_text(text, encoding="utf-8")
    return load_profile(path)


def test_by_default_the_turns_message_is_the_first_after_the_question_with_no_user_selector():
    assert DEFAULT_PROFILE.turn_find == "after-question" == TURN_FINDS[0]
    assert DEFAULT_PROFILE.selectors.user_message is None


@pytest.mark.parametrize("find", TURN_FINDS)
def test_each_way_of_finding_the_turns_message_is_read(tmp_path: Path, find: str):
    assert loaded(tmp_path, f'[turn]\nfind = "{find}"\n').turn_find == find


def test_a_user_message_selector_is_read(tmp_path: Path):
    profile = loaded(tmp_path, '[selectors]\nuser_message = ".bubble.user"\n')
    assert profile.selectors.user_message == ".bubble.user"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[turn]\nfind = "first"', "turn.find must be one of after-question, last, count"),
        ("[turn]\nfind = 2", "turn.find must be one of after-question, last, count"),
        ('[turn]\nby = "count"', "unknown key turn.by (known: find)"),
        ('turn = "last"', "[turn] must be a table"),
        ('[selectors]\nuser_message = ""', "selectors.user_message must be a non-empty string"),
        ("[selectors]\nuser_message = 1", "selectors.user_message must be a non-empty string"),
    ],
)
def test_a_bad_turn_key_is_refused_naming_the_file_and_the_key(
    tmp_path: Path, text: str, says: str
):
    with pytest.raises(ProfileError) as caught:
        loaded(tmp_path, text)
    assert str(caught.value).startswith(str(tmp_path / "my-chat.toml"))
    assert says in str(caught.value)
