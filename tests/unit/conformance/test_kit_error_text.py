"""How the page's error text is matched to the contract's copy: the `[error_text]` profile
keys, refused at load when wrong, and the matching itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.oracle.clauses import MALFORMED_REPLY
from conformance.profiles.loader import load_profile
from conformance.profiles.model import DEFAULT_PROFILE, ErrorMatch, ErrorText

from .test_kit_profile import profile_file, refused

PREFIXED = f"RuntimeError: {MALFORMED_REPLY}"


def test_the_error_copy_is_matched_exactly_by_default(tmp_path: Path):
    assert DEFAULT_PROFILE.error_text == ErrorText("exact")
    assert load_profile(profile_file(tmp_path, "")).error_text == ErrorText("exact")


@pytest.mark.parametrize("match", ["exact", "contains"])
def test_match_takes_exact_or_contains_without_a_pattern(tmp_path: Path, match: ErrorMatch):
    profile = load_profile(profile_file(tmp_path, f'[error_text]\nmatch = "{match}"\n'))
    assert profile.error_text == ErrorText(match)


def test_match_regex_takes_a_pattern_around_the_copy(tmp_path: Path):
    text = """
    [error_text]
    match = "regex"
    pattern = '^\\w+Error: {error}$'
    """
    profile = load_profile(profile_file(tmp_path, text))
    assert profile.error_text == ErrorText("regex", r"^\w+Error: {error}$")


def test_an_unknown_match_is_refused_naming_the_choices(tmp_path: Path):
    message = refused(tmp_path, '[error_text]\nmatch = "prefix"\n')
    assert message == (
        f"{tmp_path / 'my-chat.toml'}: error_text.match must be one of exact, contains, regex"
    )


def test_an_unknown_key_in_error_text_is_refused(tmp_path: Path):
    message = refused(tmp_path, '[error_text]\nmatch = "exact"\ncopy = "x"\n')
    assert "unknown key error_text.copy (known: match, pattern)" in message


def test_a_pattern_without_match_regex_is_refused(tmp_path: Path):
    message = refused(tmp_path, '[error_text]\nmatch = "contains"\npattern = "{error}"\n')
    assert message.endswith('error_text.pattern is read only with match = "regex"')


def test_match_regex_without_a_pattern_is_refused(tmp_path: Path):
    message = refused(tmp_path, '[error_text]\nmatch = "regex"\n')
    assert 'error_text.pattern is needed with match = "regex"' in message


def test_a_pattern_without_the_copy_placeholder_is_refused(tmp_path: Path):
    message = refused(tmp_path, "[error_text]\nmatch = \"regex\"\npattern = '^Error: .*'\n")
    assert message.endswith(
        "error_text.pattern must contain {error}, where the contract's error copy goes"
    )


def test_a_pattern_that_is_no_regex_is_refused(tmp_path: Path):
    message = refused(tmp_path, "[error_text]\nmatch = \"regex\"\npattern = '({error}'\n")
    assert "error_text.pattern is not a valid regex" in message


def test_error_text_must_be_a_table(tmp_path: Path):
    assert refused(tmp_path, 'error_text = "contains"\n').endswith("[error_text] must be a table")


@pytest.mark.parametrize(
    ("error_text", "shown", "matches"),
    [
        (ErrorText("exact"), MALFORMED_REPLY, True),
        (ErrorText("exact"), PREFIXED, False),
        (ErrorText("contains"), PREFIXED, True),
        (ErrorText("contains"), "The model returned a malformed reply", False),
        (ErrorText("regex", r"^\w+Error: {error}$"), PREFIXED, True),
        (ErrorText("regex", r"^\w+Error: {error}$"), f"{PREFIXED} (twice)", False),
        (ErrorText("regex", "^{error}$"), MALFORMED_REPLY.replace(".", "!"), False),
    ],
)
def test_the_error_copy_matches_as_the_profile_says(
    error_text: ErrorText, shown: str, matches: bool
):
    assert error_text.matches(shown, MALFORMED_REPLY) is matches


def test_the_copy_in_a_pattern_is_taken_literally():
    """The copy's own `.` and `—` are text, not regex syntax."""
    assert ErrorText("regex", "{error}").matches("a.b", "a.b")
    assert not ErrorText("regex", "{error}").matches("axb", "a.b")


@pytest.mark.parametrize(
    ("error_text", "wants"),
    [
        (ErrorText("exact"), "exactly 'Oops.'"),
        (ErrorText("contains"), "text containing 'Oops.'"),
        (ErrorText("regex", "^E: {error}$"), "text matching '^E: {error}$' ({error} = 'Oops.')"),
    ],
)
def test_a_failure_says_what_the_match_wanted(error_text: ErrorText, wants: str):
    assert error_text.describe("Oops.") == wants
