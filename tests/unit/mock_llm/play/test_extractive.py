"""The mock's extractive responder: answers quoted from the request's own context."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mock_llm.flows.model import Extract
from mock_llm.play.extractive import (
    MAX_CONTEXT_CHARS,
    MAX_SENTENCE_CHARS,
    context_sentences,
    document_blocks,
    extract_answer,
    note_to_read,
    prose_units,
)

INSTRUCTIONS = (
    "Answer from the notes. Cite the note paths you used, for example"
    " (source: /homelab/backups.md). Backups are a common topic."
)
NOTES = """<notes>
<excerpt path="/homelab/backups.md" heading="Schedule">
## Schedule
Backups run nightly at 02:00 from the NAS to the offsite bucket.
Restic prunes old snapshots weekly on Sunday.
</excerpt>
<excerpt path="/homelab/certs.md" heading="Renewal">
Certificates renew with certbot every 60 days. The renewal timer is certbot.timer.
</excerpt>
</notes>"""


def ask(question: str, system: str = f"{INSTRUCTIONS}\n\n{NOTES}", **more: Any) -> str:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    return extract_answer(messages, Extract(**more))


def test_the_best_matching_sentence_is_quoted_with_its_note():
    assert ask("When do backups run?", sentences=1) == (
        "From the notes:\n- Backups run nightly at 02:00 from the NAS to the offsite bucket."
        " (source: /homelab/backups.md)"
    )


def test_each_sentence_names_the_note_it_came_from():
    answer = ask("How do I renew the certificates?", sentences=1)
    assert answer.endswith("(source: /homelab/certs.md)")
    assert "certbot every 60 days" in answer


def test_the_instructions_outside_the_document_blocks_are_never_quoted():
    answer = ask("Which paths should I cite for backups?")
    assert "Cite the note paths" not in answer
    assert "common topic" not in answer


def test_a_question_the_context_does_not_touch_gets_the_fallback():
    assert ask("What is the capital of France?") == Extract().fallback


def test_a_request_without_document_context_gets_the_fallback():
    assert ask("When do backups run?", system=INSTRUCTIONS) == Extract().fallback


def test_a_custom_fallback_and_preamble_are_used():
    assert ask("capital of France?", fallback="No idea.") == "No idea."
    assert ask("When do backups run?", preamble="Notes:").startswith("Notes:\n- ")


def test_the_trigger_in_the_question_is_not_part_of_the_question():
    assert ask("[[mock:mock-clean#k1]]") == Extract().fallback


def test_at_most_the_asked_number_of_sentences_best_first():
    answer = ask("backups certbot renewal timer snapshots", sentences=2)
    lines = answer.splitlines()
    assert len(lines) == 3
    assert "renewal timer" in lines[1]  # three question words: the best match comes first


def test_equal_scores_keep_the_context_order():
    notes = '<doc path="a.md">Alpha one here. Alpha two here.</doc>'
    assert ask("alpha", system=notes, sentences=2).splitlines()[1:] == [
        "- Alpha one here. (source: a.md)",
        "- Alpha two here. (source: a.md)",
    ]


def test_a_tool_result_is_context_named_by_the_path_its_call_read():
    arguments = json.dumps({"path": "/homelab/ups.md"})
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": arguments}}
    messages = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": "How long does the UPS hold?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "The UPS holds the rack for 40 minutes."},
    ]
    assert extract_answer(messages, Extract()) == (
        "From the notes:\n- The UPS holds the rack for 40 minutes. (source: /homelab/ups.md)"
    )


def test_a_tool_result_whose_call_names_no_note_is_quoted_without_a_source():
    messages = [
        {"role": "user", "content": "How long does the UPS hold?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{bad"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "The UPS holds for 40 minutes."},
    ]  # fmt: skip
    assert extract_answer(messages, Extract()).endswith("- The UPS holds for 40 minutes.")


def test_content_given_as_parts_is_read():
    system = [{"type": "text", "text": NOTES}]
    question = [{"type": "text", "text": "When do backups run?"}]
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    assert "Backups run nightly" in extract_answer(messages, Extract())


def test_an_element_left_open_runs_to_the_end_of_the_text():
    assert document_blocks('intro <doc source="x.md">body text') == [("body text", "x.md")]


def test_elements_that_name_no_note_are_not_context():
    assert document_blocks("<b>bold</b> <doc>plain</doc> <doc title='t'>named</doc>") == [
        ("named", "t")
    ]


def test_a_long_sentence_is_cut_with_an_ellipsis():
    long = "backups " * 100
    answer = ask("backups", system=f'<doc path="l.md">{long}</doc>')
    quoted = answer.splitlines()[1]
    assert quoted.startswith("- backups")
    assert "…" in quoted
    assert len(quoted) <= len("- ") + MAX_SENTENCE_CHARS + len(" (source: l.md)")


def test_context_past_the_limit_is_not_read():
    head = "Alpha one here. " * (MAX_CONTEXT_CHARS // 16)
    system = f'<doc path="big.md">{head}Omega is past the limit.</doc>'
    messages = [{"role": "system", "content": system}]
    assert not any("Omega" in s.text for s in context_sentences(messages))


text = st.text(st.sampled_from("ab <>/=\"'.\n#-doc path source x.md"), max_size=200)


@given(system=text, question=text, sentences=st.integers(1, 10))
def test_any_request_gets_the_fallback_or_quotes_of_its_own_context(
    system: str, question: str, sentences: int
):
    answer = ask(question, system=system, sentences=sentences)
    if answer == Extract().fallback:
        return
    preamble, *quoted = answer.splitlines()
    assert preamble == Extract().preamble
    assert 1 <= len(quoted) <= sentences
    assert all(line.startswith("- ") for line in quoted)


def test_a_paragraph_wrapped_over_lines_is_one_sentence():
    assert prose_units("Backups run nightly\nat 02:00 from the NAS.\n\nNext one.") == [
        "Backups run nightly at 02:00 from the NAS.",
        "Next one.",
    ]


def test_headings_fenced_code_and_table_headers_are_not_prose():
    text = (
        "## Hosts\n\n```bash\nrestic backup /etc\n```\n\n"
        "| Host | IP |\n| --- | --- |\n| nas01 | 10.10.20.20 |\n"
    )
    assert prose_units(text) == ["nas01, 10.10.20.20"]


def test_list_items_stand_alone_and_links_read_as_their_text():
    text = "- First item\n  wraps here.\n- See [the storage note](storage.md) too.\n1. Third."
    assert prose_units(text) == [
        "First item wraps here.",
        "See the storage note too.",
        "Third.",
    ]


def test_between_equal_scores_the_note_the_question_names_comes_first():
    system = (
        '<doc path="/x/hypervisor.md">Guests run backups.</doc>'
        '<doc path="/x/backups.md">Backups run at two.</doc>'
    )
    assert ask("When do backups run?", system=system, sentences=1).endswith(
        "(source: /x/backups.md)"
    )


# --- read: looking the named note up first ------------------------------------------------

READ = Extract(read="read")


def request(question: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": f"{INSTRUCTIONS}\n\n{NOTES}"},
        {"role": "user", "content": question},
    ]


def test_a_question_naming_a_note_reads_it_first_when_the_tool_is_offered():
    assert note_to_read(request("When do the backups run?"), ("read", "grep"), READ) == (
        "/homelab/backups.md"
    )


def test_without_the_tool_offered_the_step_answers_at_once():
    assert note_to_read(request("When do the backups run?"), ("grep",), READ) is None


def test_without_read_set_the_step_answers_at_once():
    assert note_to_read(request("When do the backups run?"), ("read",), Extract()) is None


def test_a_question_naming_no_note_is_answered_at_once():
    assert note_to_read(request("When does certbot renew?"), ("read",), READ) is None


def test_once_a_tool_result_came_after_the_question_the_step_answers():
    arguments = json.dumps({"path": "/homelab/backups.md"})
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": arguments}}
    messages = [
        *request("When do the backups run?"),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "Backups run nightly at 02:00 from"
         " the NAS to the offsite bucket. Weekly checks run on Sunday."},
    ]  # fmt: skip
    assert note_to_read(messages, ("read",), READ) is None
    answer = extract_answer(messages, READ)
    assert answer.count("Backups run nightly at 02:00") == 1  # excerpt and note: quoted once
    assert "Weekly checks run on Sunday. (source: /homelab/backups.md)" in answer
