"""A turn that ended at an error outside every message, with no message (a toast): the
clauses that need the answer's text say the page showed no message; the malformed-reply
judgement reads the error's text as for any other turn."""

from __future__ import annotations

import pytest

from conformance.browser.chat import TurnView
from conformance.oracle.clauses import MALFORMED_REPLY
from conformance.oracle.expected import Expected
from conformance.oracle.judge import assert_done_showing, assert_malformed_reply, assert_shown
from conformance.profiles.model import DEFAULT_PROFILE
from mock_llm.flows.model import Expect

TOAST = TurnView("error", "", MALFORMED_REPLY, "", None, has_message=False)
WANT = Expected(Expect("Backups run nightly.", recovery=False, stripped_chars=0, error=None,
                       requests=1), canary=None)  # fmt: skip
NO_MESSAGE = (
    f"flow 'clean': the page showed no message: the turn ended at an error outside every"
    f" message ({MALFORMED_REPLY!r}), and no assistant message came"
)


def test_a_clause_that_wants_an_answer_says_the_page_showed_no_message():
    with pytest.raises(AssertionError) as failed:
        assert_done_showing(TOAST, WANT, "clean", "G1")
    assert str(failed.value).startswith(f"G1: {NO_MESSAGE}")


def test_the_answers_text_is_not_compared_on_a_turn_with_no_message():
    with pytest.raises(AssertionError) as failed:
        assert_shown(TOAST, WANT, "clean")
    assert str(failed.value).startswith(NO_MESSAGE)


def test_the_malformed_reply_is_judged_by_the_outside_errors_text():
    assert_malformed_reply(TOAST, DEFAULT_PROFILE, "G3")
