"""The once-per-run set-up's pure parts: placeholders in an HTTP step's headers, and the
preflight's one line when a step fails."""

from __future__ import annotations

import pytest

from conformance.browser.setup_steps import SetupFailed, fill_placeholders
from conformance.run.preflight import EXIT_PREFLIGHT, check_once_setup

STORED = {("local_storage", "token"): "tok-1", ("cookie", "sid"): "s-9"}


def read(kind: str, name: str) -> str | None:
    return STORED.get((kind, name))


def test_a_header_takes_a_value_from_local_storage_and_one_from_a_cookie():
    text = "Bearer {local_storage:token}; sid={cookie:sid}"
    assert fill_placeholders(text, read, "h") == "Bearer tok-1; sid=s-9"


def test_a_header_without_placeholders_is_sent_as_written():
    assert fill_placeholders("Bearer {not a placeholder}", read, "h") == (
        "Bearer {not a placeholder}"
    )


def test_a_placeholder_with_nothing_behind_it_names_the_step_and_the_storage():
    with pytest.raises(SetupFailed) as failed:
        fill_placeholders("Bearer {local_storage:jwt}", read, "setup_once[1].headers.A")
    assert str(failed.value) == (
        "setup_once[1].headers.A: the page's localStorage has no 'jwt' (after loading it)"
    )


class FailingSession:
    def set_up_once(self) -> None:
        raise SetupFailed("setup_once[0] (POST /api/settings): answered HTTP 401")


def test_a_failed_once_step_stops_the_run_in_the_preflight_with_its_reason():
    with pytest.raises(pytest.exit.Exception) as stopped:
        check_once_setup(FailingSession())  # type: ignore[arg-type]
    assert stopped.value.returncode == EXIT_PREFLIGHT
    assert str(stopped.value.msg) == (
        "conformance preflight: the profile's once-per-run set-up failed:"
        " setup_once[0] (POST /api/settings): answered HTTP 401"
    )
