"""The chat over the notes in a real browser: answers, sources, markdown, history, errors."""

from __future__ import annotations

import json

from playwright.sync_api import Page, expect

from .checks import Checks
from .conftest import Shots, Stack
from .page_driver import answered, ask


def test_grounded_answer_streams_in_with_its_sources(chat: Page, shots: Shots, key: str):
    shots.take("idle")
    message = answered(chat, f"When do backups run? [[mock:clean#{key}]]")
    expect(message.get_by_test_id("answer")).to_contain_text("Backups run nightly at 02:00")
    expect(message.get_by_test_id("sources")).to_be_visible()
    expect(message.get_by_test_id("sources")).to_contain_text("/homelab/backups.md")


def test_a_deflected_answer_has_no_sources_and_the_model_is_offered_no_tools(
    chat: Page, stack: Stack, key: str
):
    message = answered(chat, f"What is the capital of France? [[mock:clean#{key}]]")
    expect(message.get_by_test_id("answer")).not_to_be_empty()
    expect(message.get_by_test_id("sources")).to_be_hidden()
    [request] = stack.journal(key)
    assert "tools" not in request.body


CODE_STYLE = """el => { const s = getComputedStyle(el);
    return {font: s.fontFamily, bg: s.backgroundColor, pad: s.paddingLeft}; }"""


def test_markdown_renders_headings_lists_links_and_code_that_reads_as_code(chat: Page, key: str):
    answer = answered(chat, f"How do I restore? [[mock:markdown#{key}]]").get_by_test_id("answer")
    checks = Checks()
    with checks.check("headings, lists, code and links"):
        expect(answer.locator("h2")).to_have_text("Restore a file")
        expect(answer.locator("ol > li")).to_have_count(2)
        expect(answer.locator("ul > li")).to_have_count(2)
        expect(answer.locator("pre > code")).to_contain_text("restic -r sftp:nas:/backups restore")
        link = answer.get_by_role("link", name="restic docs")
        expect(link).to_have_attribute("href", "https://restic.readthedocs.io/")
        expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")
        expect(answer.locator("p code")).to_have_text("journalctl -u restic-backup")
    with checks.check("code reads as code, inline and in blocks"):
        inline = answer.locator("p code").evaluate(CODE_STYLE)
        block = answer.locator("pre").evaluate(CODE_STYLE)
        prose = answer.locator("p").first.evaluate(CODE_STYLE)
        assert "monospace" in inline["font"], inline
        assert inline["font"] != prose["font"], (inline, prose)
        assert inline["bg"] not in ("rgba(0, 0, 0, 0)", prose["bg"]), (inline, prose)
        assert inline["pad"] != "0px", inline
        assert block["bg"] not in ("rgba(0, 0, 0, 0)", inline["bg"]), (block, inline)
    checks.verify()


def test_thinking_shows_the_raw_reasoning_in_a_collapsed_block(chat: Page, key: str):
    message = answered(chat, f"When do backups run? [[mock:thinking-scaffold#{key}]]")
    thinking = message.get_by_test_id("thinking")
    expect(thinking).to_be_visible()
    expect(thinking).not_to_have_attribute("open", "")
    thinking.locator("summary").click()
    expect(thinking.locator("pre")).to_contain_text("no tools are offered")


def test_the_question_list_shows_a_question_after_its_turn_and_when_the_page_opens(
    chat: Page, key: str
):
    question = f"How are snapshots verified? [[mock:clean#{key}]]"
    answered(chat, question)
    expect(chat.get_by_test_id("history"), "the list after the turn").to_contain_text(question)
    chat.reload()
    expect(chat.get_by_test_id("history"), "the list the page opened with").to_contain_text(
        question
    )


def test_the_question_box_stops_at_the_servers_limit_breaks_lines_and_sends_on_enter(
    chat: Page, key: str
):
    box = chat.get_by_test_id("chat-input")
    checks = Checks()
    with checks.check("the box stops at the server's 4000 characters"):
        box.fill("x" * 4100)
        assert len(box.input_value()) == 4000
    with checks.check("Shift+Enter breaks the line, Enter sends"):
        box.fill("first line")
        box.press("Shift+Enter")
        box.type(f"second line [[mock:clean#{key}]]")
        expect(box).to_have_value(f"first line\nsecond line [[mock:clean#{key}]]")
        expect(chat.locator("[data-testid=message-assistant]")).to_have_count(0)
        box.press("Enter")
        expect(chat.locator("[data-testid=message-assistant]")).to_have_count(1)
    checks.verify()


def test_no_second_question_is_sent_while_a_turn_streams(
    chat: Page, stack: Stack, shots: Shots, key: str
):
    message = ask(chat, f"Walk me through the backup [[mock:slow#{key}]]")
    expect(message.get_by_test_id("answer")).not_to_be_empty()
    shots.take("streaming")
    expect(chat.get_by_test_id("chat-send")).to_be_disabled()
    chat.fill("[data-testid=chat-input]", "another question")
    chat.keyboard.press("Enter")
    expect(chat.locator("[data-testid=message-assistant]")).to_have_count(1)
    chat.get_by_test_id("chat-stop").click()
    expect(message).to_have_attribute("data-state", "done")


# Every text a retry notice shows, recorded as the page shows it: the notice is up only
# while the app waits (about a second), which a poll of the page could miss on a busy machine.
RECORD_RETRY_NOTICES = """() => {
    window.__retryNotices = [];
    new MutationObserver(() => {
        for (const notice of document.querySelectorAll('[data-testid=chat-retry]')) {
            if (!notice.hidden && notice.textContent) {
                window.__retryNotices.push(notice.textContent);
            }
        }
    }).observe(document.body, {
        subtree: true, childList: true, characterData: true, attributes: true,
    });
}"""


def test_retry_notice_shows_while_the_app_waits(chat: Page, key: str):
    chat.evaluate(RECORD_RETRY_NOTICES)
    message = ask(chat, f"When do backups run? [[mock:rate-limited#{key}]]")
    expect(message).to_have_attribute("data-state", "done")
    notices: list[str] = chat.evaluate("window.__retryNotices")
    assert any("trying again" in notice for notice in notices), notices
    expect(message.locator(".retry")).to_be_hidden()


def test_an_answer_cut_by_the_length_limit_says_so(chat: Page, key: str):
    cut = answered(chat, f"When do backups run? [[mock:length#{key}a]]")
    whole = answered(chat, f"When do backups run? [[mock:clean#{key}b]]")
    expect(cut.get_by_test_id("answer-cut")).to_be_visible()
    expect(cut.get_by_test_id("answer-cut")).to_contain_text("length limit")
    expect(whole.get_by_test_id("answer-cut")).to_be_hidden()


def test_a_refused_turn_says_why_in_the_servers_words_and_the_model_services_as_text(
    chat: Page, key: str
):
    """Three refusals on one page, each a named check: the model service's own message
    beside the app's copy, the server's reason for a question it refused (HTTP 422), and
    an upstream message that holds HTML, shown as text."""
    checks = Checks()
    with checks.check("the model service's message beside the app's copy"):
        message = ask(chat, f"When do backups run? [[mock:scafold-split#{key}]]")
        expect(message).to_have_attribute("data-state", "error")
        expect(message.get_by_test_id("chat-error")).to_have_text(
            "The model service rejected the request (HTTP 400)."
        )
        expect(message.get_by_test_id("chat-error-upstream")).to_contain_text(
            "The model service said: Unknown mock flow 'scafold-split'. Known flows: "
        )

    with checks.check("the server's reason for a refused question"):
        detail = {"detail": [{"msg": "Value error, the message is empty"}]}
        chat.route("**/api/chat", lambda route: route.fulfill(status=422, json=detail))
        message = ask(chat, "a question the server refuses")
        expect(message).to_have_attribute("data-state", "error")
        expect(message.get_by_test_id("chat-error")).to_have_text(
            "Value error, the message is empty"
        )
    chat.unroute("**/api/chat")

    with checks.check("an upstream message is shown as text, never as HTML"):
        hostile = '<img src=x onerror="window.__sg_xss=1"><b>bold</b>'
        frames = [
            {"type": "start", "turn": "t1", "mode": "deflected"},
            {"type": "error", "turn": "t1", "detail": "Rejected.", "upstream": hostile},
        ]
        body = "".join(f"data: {json.dumps(frame)}\n\n" for frame in frames)
        chat.route(
            "**/api/chat",
            lambda route: route.fulfill(status=200, content_type="text/event-stream", body=body),
        )
        message = ask(chat, "anything")
        upstream = message.get_by_test_id("chat-error-upstream")
        expect(upstream).to_have_text(f"The model service said: {hostile}")
        expect(upstream.locator("img, b")).to_have_count(0)
        assert chat.evaluate("window.__sg_xss") is None
    checks.verify()
