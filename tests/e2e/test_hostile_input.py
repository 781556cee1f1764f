"""Hostile input reaches the page from every direction and stays inert, in frames and in layout.

Three matrices, on an app of this module's own (per xdist worker): the mock with this
module's flows and a notes folder written for it (notes whose text, and notes whose *names*,
are payloads; tool results that are not notes).

1. XSS: every payload of `PAYLOADS` is sent through each source of `SOURCES` (the answer,
   the thinking text, a tool call's arguments, a tool's result, a note's text, a note's
   file name, the user's own question, the model service's error message), all of them in
   one turn where the source carries them all and in as few turns as it allows where its
   way back to the page is narrow (`batches`). "Inert" is judged four ways after the turns:
   no element in the conversation, the question list or the past-turn dialog is outside a
   small allowlist of tags or has an event handler, a source, a style or a script URL
   (`LIVE`), no link targets anything but http(s) or mailto, no payload's own page-wide
   flag (`window.__pwned_<id>`) is set, no dialog opened and no request left the app's
   origin. Each finding names its payload (`escaped`), so one payload that breaks out fails
   its source by name. Nothing is left in the DOM that could run later, so what has not run
   by then never will: no fixed wait for a late `onerror`. The matrix runs with the page's
   Content-Security-Policy bypassed, so the sanitizer alone is on trial and the flag, dialog
   and request checks have teeth (`test_the_watchers_catch_a_live_payload` proves they fire
   on a payload put in the page past the sanitizer). Every payload also carries its id as
   text that must show where its source lands: a payload that never reached the page
   cannot pass as inert.
2. Frames: upstream text that forges SSE frames (`hostile_flows.yaml`: blank lines,
   `event:`, CRLF, bare CR, U+2028, U+2029, NEL) in the answer, the thinking, tool calls, a
   note's name, the question, an upstream error and a mid-stream error event. The body the
   page read (a tee of its own fetch) is parsed by the SSE rules and by the page's own
   parser; every frame must be a documented type with the keys of its
   `scaffold_guard.app.frames.Frame` shape, with exactly one terminal frame, last.
3. Layout: questions with newlines, CR, ANSI escapes, bidi controls and Unicode line
   separators show as one message, as text, in the conversation's width, with one log line
   for the turn; notes whose names hold control or bidi characters never show, names with
   U+2028/U+2029 show on one line, and a bidi override in a tool call cannot reorder the
   chip's own "(refused)" label. (The log side is covered in depth, without a browser, by
   tests/integration/app/test_hostile_log.py.)

The cases share one page per worker (a new one after a failed case), so a case costs its
turns, not a browser start.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, NotRequired, get_args, get_origin, get_type_hints
from urllib.parse import urlsplit

import pytest
import yaml
from playwright.sync_api import Browser, BrowserContext, Dialog, Locator, Page, Request, expect
from playwright.sync_api import Error as PlaywrightError

from guardrail.json_shapes import is_object
from mock_llm import build_settings, serve_mock
from mock_llm.flows.model import EXTRACT_SENTENCES_MAX
from scaffold_guard.app.errors import UPSTREAM_MESSAGE_CHARS, one_line
from scaffold_guard.app.frames import Frame

from ..support.hostile_text import HOSTILE_TEXT
from ..support.log_lines import LOG_LINE, TURN_LINE
from ..support.servers import TEST_FLOWS, app_settings, serve_app
from .conftest import TIMEOUT_MS
from .page_driver import ASSISTANT, settled

HOSTILE_FLOWS = Path(__file__).with_name("hostile_flows.yaml")
ATTACKER = "https://attacker.invalid"
BASE_WORD = "hxbase"
"""A word only the base note holds: a question with it is grounded (tools are offered)."""

# --- the payloads ------------------------------------------------------------------------------

Source = Literal[
    "answer",
    "thinking",
    "tool-call",
    "tool-result",
    "note",
    "file-name",
    "question",
    "upstream-error",
]
SOURCES: tuple[Source, ...] = get_args(Source)

WORD_TAGS: dict[Source, str] = {"note": "n", "tool-result": "r", "file-name": "f"}
"""The sources whose text a question finds by a word, each with a letter of its own, so a
question finds one source's texts and no other's."""


@dataclass(frozen=True)
class Payload:
    """Hostile text. If it ever ran, it would set a flag of its own (`window.__pwned_<id>`)
    to its id, open a dialog that says its id or load something from ATTACKER/<id>, and it
    shows its id as text wherever it lands: payloads travel together, and whatever one of
    them did, or failed to show, names it."""

    id: str
    text: str

    def word(self, source: Source) -> str:
        """A word unique to this payload's text in `source` (a note, a tool's result, a
        note's name), for a question to find that text by."""
        return f"hx{WORD_TAGS[source]}{re.sub(r'[^a-z0-9]', '', self.id)}"

    @property
    def file_name(self) -> str:
        return f"{self.text}.md"


def _payload(id: str, template: str) -> Payload:
    flag = f"__pwned_{id.replace('-', '_')}"
    return Payload(
        id,
        template.format(id=id, flag=flag, set=f"window.{flag}='{id}'", url=f"{ATTACKER}/{id}"),
    )


PAYLOADS = (
    _payload("script-tag", "<script>{set};alert('{id}')</script>"),
    _payload("img-onerror", "<img src=x onerror=\"{set};alert('{id}')\">"),
    _payload("img-beacon", '<img src="{url}.png" onload="{set}">'),
    _payload("attribute-breakout", '"\' autofocus onfocus={set} x="><img src=x onerror={set}>'),
    _payload("svg-onload", "<svg onload={set}>"),
    _payload("iframe-srcdoc", "<iframe srcdoc=\"<script>parent.{flag}='{id}'</script>\"></iframe>"),
    _payload("details-ontoggle", "<details open ontoggle={set}>"),
    _payload("mxss-noscript", '<noscript><p title="</noscript><img src=x onerror={set}>">'),
    _payload("mxss-math-style", "<math><mtext><table><mglyph><style><img src=x onerror={set}>"),
    _payload("md-js-link", "[{id}](javascript:{set})"),
    _payload("md-js-obfuscated", "[{id}](JaVa&#x09;ScRiPt&colon;{set})"),
    _payload("md-js-autolink", "<javascript:{set}>"),
    _payload("md-js-reference", "[{id}][hx]\n\n[hx]: javascript:{set}"),
    _payload(
        "md-data-link",
        "[{id}](data:text/html;base64,PHNjcmlwdD5wYXJlbnQuX19wd25lZD0xPC9zY3JpcHQ+)",
    ),
    _payload("md-image-beacon", "![{id}]({url}.png)"),
    _payload("md-title-breakout", '[{id}]({url} "t\\" onmouseover=\\"{set}")'),
    _payload("html-js-link", '<a href="javascript:{set}">{id}</a>'),
    _payload(
        "css-inject",
        '<style>@import url("{url}.css");body{{background:url("{url}.png")}}</style>'
        '<div style="background:url({url}-attr)">{id}</div>',
    ),
    _payload("meta-refresh", '<meta http-equiv="refresh" content="0;url={url}">{id}'),
    _payload("base-href", '<base href="{url}/">{id}'),
    _payload(
        "form-action",
        '<form action="{url}"><button formaction="javascript:{set}">{id}</button></form>',
    ),
)


def paragraphs(payloads: tuple[Payload, ...]) -> str:
    """The payloads in one text, each a paragraph of its own."""
    return "\n\n".join(p.text for p in payloads)


EVERYTHING = paragraphs(PAYLOADS)
"""Every payload in one text, for the stored-turn views."""

CONTROL = _payload("control", '<img src="{url}.png" onerror="{set};alert(\'{id}\')">')
"""The positive control's payload: put in the page past the sanitizer, it runs."""

# --- the sources -------------------------------------------------------------------------------


def fits(payload: Payload, source: Source) -> bool:
    """Whether the payload can travel by the source: a file name holds no `/` nor line
    break and fits the filesystem's 255 bytes."""
    if source != "file-name":
        return True
    return (
        "/" not in payload.text
        and "\n" not in payload.text
        and len(payload.file_name.encode()) <= 255
    )


PER_TURN: dict[Source, int] = {"note": 5, "tool-result": 7}
"""How many payloads one turn carries where the way back to the page is narrow: the app
retrieves five notes for a question (scaffold_guard/app/rag/index.py), and the mock's answer quotes
ten sentences at most (EXTRACT_SENTENCES_MAX), the base note's among them. Every other source
carries them all at once, but for the model service's error message, cut to
UPSTREAM_MESSAGE_CHARS (`batches`)."""


def batches(source: Source) -> list[tuple[Payload, ...]]:
    """The payloads that fit `source`, in order, in as few turns as the source allows."""
    fitting = [p for p in PAYLOADS if fits(p, source)]
    if source != "upstream-error":
        size = PER_TURN.get(source, len(fitting))
        return [tuple(fitting[start : start + size]) for start in range(0, len(fitting), size)]
    packed: list[tuple[Payload, ...]] = [()]
    for payload in fitting:
        joined = one_line(error_message((*packed[-1], payload)), limit=len(EVERYTHING))
        if packed[-1] and len(joined) > UPSTREAM_MESSAGE_CHARS:
            packed.append(())
        packed[-1] = (*packed[-1], payload)
    return packed


def error_message(batch: tuple[Payload, ...]) -> str:
    return " ".join(p.text for p in batch)


def flow_name(source: Source, turn: int) -> str:
    return f"hx-{source}-{turn}"


def batch_flow(source: Source, batch: tuple[Payload, ...]) -> dict[str, Any] | None:
    """The mock's flow that carries `batch` by `source`; None where the payloads travel in
    the notes or the question itself."""
    if source == "answer":
        return {"steps": [{"content": paragraphs(batch)}]}
    if source == "thinking":
        return {"steps": [{"reasoning": paragraphs(batch), "content": "Thought it through."}]}
    if source == "tool-call":
        greps = [{"name": "grep", "arguments": {"pattern": p.text}} for p in batch]
        return {"steps": [{"tool_calls": greps}, {"content": "Searched the notes."}]}
    if source in ("tool-result", "file-name"):
        path = tool_result_path if source == "tool-result" else named_path
        reads = [{"name": "read", "arguments": {"path": path(p)}} for p in batch]
        return {"steps": [{"tool_calls": reads}, QUOTE_THE_CONTEXT]}
    if source == "upstream-error":
        fault = {"kind": "http", "status": 400, "message": error_message(batch)}
        return {"steps": [{"fault": fault}]}
    return None


QUOTE_THE_CONTEXT = {"extract": {"sentences": EXTRACT_SENTENCES_MAX}}
"""A step that answers with the sentences of the request's context the question names."""


def payload_flows() -> dict[str, Any]:
    """The mock's flows for the matrix, made from the payload table (a flow file in JSON)."""
    flows: dict[str, Any] = {
        "hx-extract": {
            "description": "Answer from the request's context (the retrieved notes).",
            "steps": [QUOTE_THE_CONTEXT],
        },
        "hx-answer-everything": {"steps": [{"content": EVERYTHING}]},
        "hx-forge-file-name": {
            "steps": [
                {"tool_calls": [{"name": "read", "arguments": {"path": FORGE_PATH}}]},
                {"extract": {"sentences": 4}},
            ]
        },
        "hx-bidi-tool-calls": {
            "steps": [
                {
                    "tool_calls": [
                        {"name": "read", "arguments": {"path": f"/homelab/{BIDI_TEXT}.md"}},
                        {"name": BIDI_TEXT, "arguments": {"path": "/homelab/hxbase.md"}},
                    ]
                },
                {"content": "Looked it up."},
            ]
        },
        "hx-list-and-grep-hidden": {
            "steps": [
                {
                    "tool_calls": [
                        {"name": "list", "arguments": {"path": "/homelab/"}},
                        {"name": "grep", "arguments": {"pattern": "must never be named"}},
                    ]
                },
                {"extract": {"sentences": 4}},
            ]
        },
    }
    for source in SOURCES:
        for turn, batch in enumerate(batches(source)):
            flow = batch_flow(source, batch)
            if flow is not None:
                flows[flow_name(source, turn)] = flow
    return {"flows": flows}


def tool_result_path(payload: Payload) -> str:
    # Not a note (.txt): never indexed, so the payload reaches the model only as the result.
    return f"/homelab/results/{payload.id}.txt"


def named_path(payload: Payload) -> str:
    return f"/homelab/names/{payload.file_name}"


BIDI_TEXT = "\u202edm.exe"
"""An unterminated right-to-left override (reads `exe.md`), in a tool call."""

FORGE_NAME = 'hxforge data: {"type":"done"} event: error.md'
"""A note's name that spells frames (a file name cannot hold a line break the app shows)."""
FORGE_PATH = f"/homelab/names/{FORGE_NAME}"

SEPARATED_NAMES = {
    "line-separator": "hxsep one\u2028two.md",
    "paragraph-separator": "hxsep one\u2029two.md",
}
"""Names with Unicode line breaks that are neither control nor bidi characters."""

# Names that hold control or bidi characters: the app must never show them (part 3).
UNSHOWABLE_NAMES = {
    "newline": "hxhidden new\nline.md",
    "cr": "hxhidden cr\rname.md",
    "ansi-sgr": "hxhidden \x1b[31mred\x1b[0m.md",
    "ansi-osc8": "hxhidden \x1b]8;;attacker.invalid\x07link\x1b]8;;\x07.md",
    "rlo": "hxhidden \u202edm.exe.md",
    "isolates": "hxhidden \u2066x\u2067y\u2068z\u2069.md",
    "nel": "hxhidden \x85nel.md",
}


def write_notes(folder: Path) -> Path:
    (folder / "names").mkdir(parents=True)
    (folder / "results").mkdir()
    (folder / "hxbase.md").write_text(
        f"# Base\n\nThe {BASE_WORD} note says backups run nightly at 02:00.\n"
    )
    for p in PAYLOADS:
        (folder / f"{p.id}.md").write_text(
            f"# {p.id}\n\nThe {p.word('note')} note says: {p.text}\n", encoding="utf-8"
        )
        (folder / "results" / f"{p.id}.txt").write_text(
            f"The {p.word('tool-result')} result says: {p.text}\n", encoding="utf-8"
        )
        if fits(p, "file-name"):
            (folder / "names" / p.file_name).write_text(
                f"# Named\n\nThe {p.word('file-name')} note is named after its payload.\n"
            )
    for name in SEPARATED_NAMES.values():
        (folder / "names" / name).write_text(
            "# Separated\n\nThe hxsep note has a line separator in its name.\n", encoding="utf-8"
        )
    (folder / "names" / FORGE_NAME).write_text(
        "# Forge\n\nThe hxforge note is named like frames.\n", encoding="utf-8"
    )
    for name in UNSHOWABLE_NAMES.values():
        (folder / name).write_text(
            "# Hidden\n\nThe hxhidden note must never be named.\n", encoding="utf-8"
        )
    return folder


# --- the app under test ------------------------------------------------------------------------


@dataclass(frozen=True)
class Hostile:
    app_url: str
    mock_url: str
    log_file: Path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    root = tmp_path_factory.mktemp("hostile")
    notes = write_notes(root / "notes")
    flows = root / "payload_flows.json"
    flows.write_text(json.dumps(payload_flows()), encoding="utf-8")
    with serve_mock(build_settings((TEST_FLOWS, HOSTILE_FLOWS, flows))) as mock_url:
        settings = replace(
            # Grounded whenever a note is found: a question that names many payloads' notes
            # is offered the tools as one that names a single note is.
            app_settings(
                mock_url, root / "data", SG_NOTES_DIR=str(notes), SG_GROUNDING_THRESHOLD="0"
            ),
            embedded_mock_url=mock_url,  # the demo's page: its journal links are on trial too
        )
        with serve_app(settings) as app_url:
            yield Hostile(app_url, mock_url, settings.log_file)


# --- the watched page --------------------------------------------------------------------------


@dataclass
class Watched:
    """A page of the app with everything a live payload would do recorded."""

    page: Page
    app_url: str
    dialogs: list[str] = field(default_factory=list[str])
    outside: list[str] = field(default_factory=list[str])

    def live(self) -> list[str]:
        if not self.page.url.startswith(self.app_url):  # a payload took the page elsewhere
            return [f"the page left the app for {self.page.url}"]
        return self.page.evaluate(LIVE)


def open_watched(context: BrowserContext, app_url: str) -> Watched:
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    watched = Watched(page, app_url)
    origin = urlsplit(app_url).netloc

    def on_dialog(dialog: Dialog) -> None:
        watched.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def on_request(request: Request) -> None:
        if urlsplit(request.url).netloc != origin:
            watched.outside.append(request.url)

    page.add_init_script(TEE_CHAT_BODIES)
    page.on("dialog", on_dialog)
    page.on("popup", lambda popup: watched.outside.append(f"popup {popup.url}"))
    context.on("request", on_request)
    page.goto(app_url + "/")
    return watched


LIVE = """() => {
  // Tags the conversation may hold: the page's own and what safe markdown renders to.
  const PAGE_TAGS = ["article", "section", "div", "p", "span", "pre", "ul", "ol", "li", "h2",
    "h3", "details", "summary", "a", "bdi"];
  const MARKDOWN_TAGS = ["strong", "em", "b", "i", "code", "blockquote", "h1", "h4", "h5",
    "h6", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "del", "s", "sup", "sub"];
  const TEXT_ONLY = new Set([...PAGE_TAGS, ...MARKDOWN_TAGS]);
  const LOADS = new Set(["style", "src", "srcdoc", "srcset", "action", "formaction",
    "background", "poster", "xlink:href", "http-equiv", "autofocus"]);
  const SAFE_LINKS = new Set(["http:", "https:", "mailto:"]);
  const found = [];
  const roots = [
    ["chat-log", TEXT_ONLY],
    ["past-turn", new Set([...TEXT_ONLY, "button"])],
    ["history", new Set(["li", "button"])],
    ["announcer", new Set()],
  ];
  // Each finding ends with the markup it is about, which names its payload.
  const markup = (element) => element.outerHTML.slice(0, 300);
  for (const [testid, allowed] of roots) {
    const root = document.querySelector(`[data-testid=${testid}]`);
    if (root === null) {
      found.push(`no ${testid} in the page at ${location.href}`);  // a payload replaced it
      continue;
    }
    for (const element of root.querySelectorAll("*")) {
      const where = `<${element.localName}> in ${testid}`;
      const report = (what) => found.push(`${where}${what}: ${markup(element)}`);
      if (!allowed.has(element.localName)) report("");
      if (element.localName === "button" && element.closest("[data-testid=answer]")) {
        report(" (inside an answer)");
      }
      for (const name of element.getAttributeNames()) {
        const value = element.getAttribute(name) ?? "";
        if (name.startsWith("on") || LOADS.has(name)) report(` has ${name}`);
        if (/^(javascript|vbscript|data):/i.test(value.replace(/[\\x00-\\x20]+/g, ""))) {
          report(` has ${name}=${value}`);
        }
      }
      if (element.localName === "a" && element.hasAttribute("href")
          && !SAFE_LINKS.has(new URL(element.href, location.href).protocol)) {
        report(` links to ${element.href}`);
      }
    }
  }
  const loaders = document.querySelectorAll("base, meta[http-equiv], iframe, object, embed");
  for (const element of loaders) {
    found.push(`a <${element.localName}> in the document: ${markup(element)}`);
  }
  const sheets = [...document.styleSheets];
  if (sheets.length !== 1 || !(sheets[0].href ?? "").startsWith(`${location.origin}/static/`)) {
    const described = sheets.map((sheet) => sheet.href ?? markup(sheet.ownerNode));
    found.push(`style sheets ${JSON.stringify(described)}`);
  }
  // Each payload's flag is its own (`window.__pwned_<id>`), set to its id.
  for (const name of Object.keys(window).filter((key) => key.startsWith("__pwned"))) {
    found.push(`window.${name} = ${String(window[name])}`);
  }
  return found;
}"""
"""What could run or load in the page: one line per finding, empty when all is inert."""


@dataclass
class SharedPage:
    """One watched page per worker, shared by the cases; replaced after a failed case."""

    context: BrowserContext
    app_url: str
    current: Watched | None = None

    def get(self) -> Watched:
        if self.current is None:
            self.current = open_watched(self.context, self.app_url)
        return self.current

    def discard(self) -> None:
        if self.current is not None:
            self.current.page.close()
            self.current = None


def csp_bypassed(browser: Browser) -> BrowserContext:
    # Without the page's Content-Security-Policy, the sanitizer is the only wall: a payload
    # that got through would run and the flag, dialog and request checks would see it.
    return browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 800})


@pytest.fixture(scope="module")
def shared_page(browser: Browser, hostile: Hostile) -> Iterator[SharedPage]:
    context = csp_bypassed(browser)
    shared = SharedPage(context, hostile.app_url)
    yield shared
    context.close()


@pytest.fixture
def watched(shared_page: SharedPage, request: pytest.FixtureRequest) -> Iterator[Watched]:
    page = shared_page.get()
    dialogs, outside = len(page.dialogs), len(page.outside)
    yield page
    report = getattr(request.node, "rep_call", None)
    if report is None or report.failed or page.dialogs[dialogs:] or page.outside[outside:]:
        shared_page.discard()  # a failed case must not fail the next one


def escaped(page: Watched) -> dict[str, list[str]]:
    """Whatever ran, rendered live or reached outside the app, under the id of each payload
    it names ("?" for what names none): empty while every payload stays inert."""
    findings = [
        *page.live(),
        *(f"dialog {dialog}" for dialog in page.dialogs),
        *(f"request {url}" for url in page.outside),
    ]
    named: dict[str, list[str]] = {}
    for finding in findings:
        for owner in [p.id for p in (*PAYLOADS, CONTROL) if p.id in finding] or ["?"]:
            named.setdefault(owner, []).append(finding)
    return named


def assert_inert(page: Watched) -> None:
    found = escaped(page)
    assert found == {}, f"payloads not inert: {', '.join(found)}"


# --- 1. the XSS matrix -------------------------------------------------------------------------


def question_for(source: Source, turn: int, batch: tuple[Payload, ...], key: str) -> str:
    if source == "note":
        words = " ".join(p.word(source) for p in batch)
        return f"What does the {words} note say? [[mock:hx-extract#{key}]]"
    if source == "question":
        return f"{paragraphs(batch)} {BASE_WORD} [[mock:clean#{key}]]"
    words = " ".join(p.word(source) for p in batch) if source in WORD_TAGS else ""
    about = f" about {words}" if words else ""
    return f"What does {BASE_WORD} say{about}? [[mock:{flow_name(source, turn)}#{key}]]"


def landed(page: Page, message: Locator, source: Source) -> dict[str, Locator]:
    """Where a payload sent by `source` must show as text (proof it reached the page)."""
    if source == "thinking":
        return {"thinking": message.get_by_test_id("thinking")}
    if source == "tool-call":
        return {"tool-call": message.get_by_test_id("tool-call")}
    if source == "file-name":
        return {name: message.get_by_test_id(name) for name in ("tool-call", "sources", "answer")}
    if source == "question":
        return {
            "message-user": page.get_by_test_id("message-user").last,
            "history": page.get_by_test_id("history"),
        }
    if source == "upstream-error":
        return {"chat-error-upstream": message.get_by_test_id("chat-error-upstream")}
    return {"answer": message.get_by_test_id("answer")}


def shown_where_it_lands(
    page: Page, source: Source, question: str, turn_key: str
) -> dict[str, str]:
    """Ask; the text of each place where the turn's payloads must show."""
    message = settled(page, question)
    if source == "question":  # the list is fetched again once the turn has ended
        expect(page.get_by_test_id("history").get_by_role("button").first).to_contain_text(turn_key)
    return {
        name: "".join(place.all_text_contents())
        for name, place in landed(page, message, source).items()
    }


@pytest.mark.parametrize("source", SOURCES)
def test_every_hostile_payload_stays_inert(watched: Watched, source: Source, key: str):
    """Every payload that fits the source, in as few turns as the source allows: each shows
    its id where the source lands, and none ran, rendered live or reached outside the app.
    The page is judged after each turn (a later payload that takes the page away must not
    hide what an earlier one did), and the failure lists, under each payload's id,
    everything wrong with it."""
    problems: dict[str, list[str]] = {}

    def record(owner: str, problem: str) -> None:
        if problem not in problems.setdefault(owner, []):
            problems[owner].append(problem)

    for turn, batch in enumerate(batches(source)):
        turn_key = f"{key}t{turn}"
        question = question_for(source, turn, batch, turn_key)
        try:
            shown = shown_where_it_lands(watched.page, source, question, turn_key)
        except (AssertionError, PlaywrightError) as error:  # e.g. a payload took the page away
            shown = None
            for payload in batch:
                record(payload.id, f"its turn broke off: {str(error).splitlines()[0]}")
        for name, text in (shown or {}).items():
            for payload in batch:
                if payload.id not in text:
                    record(payload.id, f"not shown in {name}")
        for owner, findings in escaped(watched).items():
            for finding in findings:
                record(owner, finding)
        if shown is None:
            break
    assert problems == {}, f"payloads not inert or not shown: {', '.join(problems)}"


RENDER_ALONE_AND_TOGETHER = """async (texts) => {
  const { renderMarkdown } = await import("/static/render.js");
  const html = (text) => {
    const box = document.createElement("div");
    box.append(renderMarkdown(text));
    return box.innerHTML;
  };
  return [texts.map(html), html(texts.join("\\n\\n"))];
}"""


def test_payloads_sent_together_render_as_each_renders_alone(watched: Watched):
    """The matrix sends a source's payloads together, as the paragraphs of one text: the
    page renders that text as each payload's own rendering, one after another, so no payload
    is judged in a context another one opened."""
    alone, together = watched.page.evaluate(RENDER_ALONE_AND_TOGETHER, [p.text for p in PAYLOADS])
    assert together == "".join(alone)


def test_a_stored_turn_with_every_payload_stays_inert_after_a_reload_and_in_the_dialog(
    browser: Browser, hostile: Hostile, key: str
):
    """The stored-turn views (the conversation restored after a reload, the past-turn dialog)
    render an answer and a question from the history API, not from frames: every payload at
    once, in the answer and in the question."""
    context = csp_bypassed(browser)
    try:
        watched = open_watched(context, hostile.app_url)
        page = watched.page
        question = f"{EVERYTHING} {BASE_WORD} [[mock:hx-answer-everything#{key}]]"
        settled(page, question)
        page.reload()
        restored = page.locator(f"{ASSISTANT}[data-restored=true]")
        expect(restored).to_have_count(1)
        for p in PAYLOADS:
            expect(restored.get_by_test_id("answer")).to_contain_text(p.id)
        assert_inert(watched)
        page.get_by_test_id("history").get_by_role("button").first.click()
        dialog = page.get_by_test_id("past-turn")
        expect(dialog).to_be_visible()
        for p in PAYLOADS:
            expect(dialog.get_by_test_id("answer")).to_contain_text(p.id)
            expect(page.get_by_test_id("past-turn-question")).to_contain_text(p.id)
        assert_inert(watched)
    finally:
        context.close()


def test_the_watchers_catch_a_live_payload(browser: Browser, hostile: Hostile):
    """Positive control: a payload put in the conversation past the sanitizer runs (the CSP
    is bypassed), and each check of `assert_inert` sees it, under the payload's id."""
    context = csp_bypassed(browser)
    try:
        watched = open_watched(context, hostile.app_url)
        page = watched.page
        assert escaped(watched) == {}
        with page.expect_event("dialog"), page.expect_request(f"{ATTACKER}/control.png"):
            page.evaluate(
                """(html) => document.querySelector("[data-testid=chat-log]").insertAdjacentHTML(
                    "beforeend", html)""",
                CONTROL.text,
            )
        live = watched.live()
        assert "<img> in chat-log: " + CONTROL.text in live
        assert "<img> in chat-log has onerror: " + CONTROL.text in live
        assert "window.__pwned_control = control" in live
        assert watched.dialogs == ["alert: control"]
        assert watched.outside == [f"{ATTACKER}/control.png"]
        assert list(escaped(watched)) == ["control"]
    finally:
        context.close()


# --- 2. forged frames --------------------------------------------------------------------------

TERMINAL = {"done", "error"}


def frame_shapes() -> dict[str, list[tuple[frozenset[str], frozenset[str]]]]:
    """Each documented frame type's (required keys, all keys), read from
    `scaffold_guard.app.frames.Frame`."""
    shapes: dict[str, list[tuple[frozenset[str], frozenset[str]]]] = {}
    for kind in get_args(Frame):
        hints = get_type_hints(kind, include_extras=True)
        optional = {name for name, hint in hints.items() if get_origin(hint) is NotRequired}
        for type_name in get_args(hints["type"]):
            shapes.setdefault(type_name, []).append((frozenset(hints) - optional, frozenset(hints)))
    return shapes


FRAME_SHAPES = frame_shapes()


def sse_frames(body: str) -> list[dict[str, Any]]:
    """The frames of a chat response body read by the SSE rules (lines end at CRLF, LF or CR;
    a blank line ends an event), each event checked to be one `data:` line of a JSON object."""
    assert body.endswith("\n\n"), f"the body does not end with a blank line: {body[-80:]!r}"
    events: list[list[str]] = [[]]
    for line in re.split(r"\r\n|\r|\n", body):
        if line:
            events[-1].append(line)
        elif events[-1]:
            events.append([])
    frames: list[dict[str, Any]] = []
    for lines in events[:-1]:
        assert len(lines) == 1, f"an event of {len(lines)} lines: {lines!r}"
        assert lines[0].startswith("data: "), f"a line that is not data: {lines[0]!r}"
        frame = json.loads(lines[0].removeprefix("data: "))
        assert is_object(frame), f"a frame that is not an object: {lines[0]!r}"
        frames.append(frame)
    return frames


def assert_documented(frames: list[dict[str, Any]]) -> None:
    for frame in frames:
        assert frame.get("type") in FRAME_SHAPES, f"undocumented frame type: {frame!r}"
        keys = frozenset(frame)
        assert any(req <= keys <= every for req, every in FRAME_SHAPES[frame["type"]]), (
            f"a {frame['type']} frame with keys {sorted(keys)}"
        )
    kinds = [frame["type"] for frame in frames]
    assert kinds[0] == "start", kinds
    assert [k for k in kinds if k in TERMINAL] == [kinds[-1]], f"terminal frames in {kinds}"


TEE_CHAT_BODIES = """(() => {
  // Keep a copy of every chat response's body as the page reads it (a tee of the stream:
  // the page still reads its own branch chunk by chunk). The browser's protocol does not
  // keep the body of a streamed fetch that the page consumed, so it is copied here.
  const bodies = [];
  Object.defineProperty(window, "__hxChatBodies", { value: bodies });
  const fetch = window.fetch.bind(window);
  window.fetch = async (resource, init) => {
    const response = await fetch(resource, init);
    if (new URL(String(resource), location.href).pathname === "/api/chat" && response.ok) {
      const entry = { turn: response.headers.get("x-turn-id"), body: null };
      bodies.push(entry);
      response.clone().text().then((text) => { entry.body = text; });
    }
    return response;
  };
})()"""


@dataclass(frozen=True)
class Received:
    message: Locator
    body: str
    turn_id: str


def received(page: Page, question: str) -> Received:
    """Ask; the turn's message once it ended, and the chat response's body as the page read it."""
    seen = page.evaluate("window.__hxChatBodies.length")
    message = settled(page, question)
    entry = page.wait_for_function(
        "(n) => { const e = window.__hxChatBodies[n]; return e && e.body !== null && e; }",
        arg=seen,
    ).json_value()
    return Received(message, entry["body"], entry["turn"])


FORGE_TEXT: str = yaml.safe_load(HOSTILE_FLOWS.read_text(encoding="utf-8"))["x-forge"]
"""The forging text of hostile_flows.yaml."""

FORGE_SOURCES = {
    "answer-chunked": ("forge-answer", "answer", "done"),
    "answer-whole": ("forge-answer-whole", "answer", "done"),
    "thinking": ("forge-thinking", "thinking", "done"),
    "tool-call": ("forge-tool", "tool-call", "done"),
    "upstream-error": ("forge-upstream", "chat-error-upstream", "error"),
    "error-event": ("forge-error-event", None, "error"),  # the page shows the app's own copy
    "file-name": ("hx-forge-file-name", "sources", "done"),
    "question": ("clean", "message-user", "done"),
}
"""Where upstream text forges frames: the flow, the hook its text shows in, the turn's end."""


@pytest.mark.parametrize("source", list(FORGE_SOURCES))
def test_forged_frames_reach_the_page_as_text_in_documented_frames(
    watched: Watched, source: str, key: str
):
    flow, hook, end = FORGE_SOURCES[source]
    question = f"What does {BASE_WORD} say about hxforge? [[mock:{flow}#{key}]]"
    if source == "question":
        question = f"{FORGE_TEXT} {BASE_WORD} [[mock:{flow}#{key}]]"
    page = watched.page
    before = page.locator(ASSISTANT).count()
    got = received(page, question)

    frames = sse_frames(got.body)
    assert_documented(frames)
    assert frames[-1]["type"] == end
    # The page's own reader splits the body into the same frames, with nothing left over.
    split = page.evaluate(
        "async (body) => (await import('/static/stream.js')).splitEvents(body)", got.body
    )
    assert split == {"frames": frames, "rest": ""}
    # The forgery reached the page whole, as the text of the frames that carry model text.
    if source.startswith("answer"):
        assert "".join(f["text"] for f in frames if f["type"] == "delta") == FORGE_TEXT
    if source == "thinking":
        assert "".join(f["text"] for f in frames if f["type"] == "thinking") == FORGE_TEXT
    expect(page.locator(ASSISTANT)).to_have_count(before + 1)
    expect(got.message).to_have_attribute("data-state", end)
    if hook == "message-user":
        expect(page.get_by_test_id(hook).last).to_contain_text('data: {"type":"done"')
    elif hook is not None:
        expect(got.message.get_by_test_id(hook).first).to_contain_text('data: {"type":"done"')
    assert_inert(watched)


def test_every_frame_is_one_line_by_any_unicode_line_break(watched: Watched, key: str):
    """Regression (issue 12): frames were JSON with U+2028, U+2029 and U+0085 raw, so a
    client that splits lines the Python way (str.splitlines, httpx's aiter_lines) cut a
    frame in two."""
    got = received(watched.page, f"{BASE_WORD} hxforge [[mock:forge-answer-whole#{key}]]")
    lines = got.body.splitlines()
    assert all(line == "" or line.startswith("data: {") for line in lines), [
        line for line in lines if line and not line.startswith("data: {")
    ]


# --- 3. control, bidi and line-break characters in questions and names -------------------------


def assert_one_line_per_turn(log_file: Path, turn_id: str) -> None:
    text = log_file.read_text(encoding="utf-8")
    lines = text.split("\n")[:-1]
    assert text.splitlines() == lines, "a line break other than LF in the log"
    assert [line for line in lines if not LOG_LINE.fullmatch(line)] == []
    turn = re.compile(TURN_LINE.format(turn=turn_id))
    assert len([line for line in lines if turn.fullmatch(line)]) == 1
    assert not re.search(
        r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]", text
    )


def visual_order_is_left_to_right(locator: Locator) -> bool:
    """Whether the first character of the element's text lies left of its last one."""
    return locator.evaluate(
        """(element) => {
          const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
          const nodes = [];
          while (walker.nextNode()) {
            if (walker.currentNode.data.trim()) nodes.push(walker.currentNode);
          }
          const range = document.createRange();
          const at = (node, offset) => {
            range.setStart(node, offset); range.setEnd(node, offset + 1);
            return range.getBoundingClientRect();
          };
          const first = nodes[0], last = nodes[nodes.length - 1];
          const a = at(first, first.data.search(/\\S/));
          const b = at(last, last.data.trimEnd().length - 1);
          return a.top < b.top || (a.top === b.top && a.left < b.left);
        }"""
    )


@pytest.mark.parametrize("text_id", list(HOSTILE_TEXT))
def test_a_question_with_control_characters_is_one_message_of_text_and_one_log_line(
    watched: Watched, hostile: Hostile, text_id: str, key: str
):
    hostile_text = HOSTILE_TEXT[text_id]
    question = f"When do backups run? {hostile_text} {BASE_WORD} [[mock:clean#{key}]]"
    page = watched.page
    users = page.get_by_test_id("message-user")
    before = users.count()
    got = received(page, question)

    expect(users).to_have_count(before + 1)
    expect(page.locator(ASSISTANT)).to_have_count(before + 1)
    shown = re.sub(r"\r\n?", "\n", question)  # a text box keeps line breaks as LF
    assert users.last.evaluate("(element) => element.textContent") == shown
    assert users.last.locator("*").count() == 1  # the one paragraph of text
    expect(page.get_by_test_id("history").get_by_role("button").first).to_have_text(shown)
    log = page.get_by_test_id("chat-log")
    assert log.evaluate("(log) => log.scrollWidth <= log.clientWidth")
    # A bidi override in the question ends with it: the answer below still reads left to right.
    assert visual_order_is_left_to_right(got.message.get_by_test_id("answer"))
    assert_one_line_per_turn(hostile.log_file, got.turn_id)
    assert_inert(watched)


def test_notes_named_with_control_or_bidi_characters_are_never_shown(watched: Watched, key: str):
    got = received(
        watched.page, f"What does {BASE_WORD} say? [[mock:hx-list-and-grep-hidden#{key}]]"
    )
    chips = got.message.get_by_test_id("tool-call")
    expect(chips).to_have_text(["list /homelab/", "grep must never be named"])
    expect(got.message).not_to_contain_text("hxhidden")
    assert_inert(watched)


LINE_BOXES = """(element) => {
  const range = document.createRange();
  range.selectNodeContents(element);
  return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size;
}"""


def test_a_note_named_with_a_unicode_line_break_shows_on_one_line(watched: Watched, key: str):
    got = received(
        watched.page, f"What does {BASE_WORD} say about hxsep? [[mock:hx-extract#{key}]]"
    )
    items = got.message.get_by_test_id("sources").locator("li")
    expect(items.filter(has_text="hxsep")).to_have_count(len(SEPARATED_NAMES))
    for item in items.filter(has_text="hxsep").all():
        assert item.evaluate(LINE_BOXES) == 1, item.text_content()
    assert_inert(watched)


LAST_CHARACTER_IS_RIGHTMOST = """(element) => {
  // Whether the element's last character is drawn at its right end (as left-to-right text
  // is): the app's own words after a model's text must not be reordered by that text.
  const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  const rights = [];
  while (walker.nextNode()) {
    const node = walker.currentNode;
    for (let i = 0; i < node.data.length; i++) {
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const rect = range.getBoundingClientRect();
      if (rect.width > 0) rights.push(rect.right);
    }
  }
  return rights.length > 0 && rights[rights.length - 1] === Math.max(...rights);
}"""


def test_a_bidi_override_in_a_tool_call_does_not_reorder_the_chips_refused_label(
    watched: Watched, key: str
):
    """BUG (fixed in frontend/view.js): a chip was one text node, `name where (refused)`, so
    an unterminated U+202E in the model's tool name or path ran to the end of the chip and
    drew the app's own "(refused)" label reversed, before the model's text."""
    got = received(watched.page, f"What does {BASE_WORD} say? [[mock:hx-bidi-tool-calls#{key}]]")
    chips = got.message.get_by_test_id("tool-call")
    expect(chips).to_have_text(
        [f"read /homelab/{BIDI_TEXT}.md (refused)", f"{BIDI_TEXT} /homelab/hxbase.md (refused)"]
    )
    for chip in chips.all():
        assert chip.evaluate(LAST_CHARACTER_IS_RIGHTMOST), chip.text_content()
    assert_inert(watched)
