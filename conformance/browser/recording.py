"""Everything a page ever shows, from the kit's recorder (js/recorder.js), and the text
around what it showed.

The recorder is an init script, so it runs before any of the page's own scripts, in every
frame, and reports every inserted node, changed text and old value through a binding.
`prove_live()` is its positive control: a node the kit adds must reach it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from conformance.browser.scripts import script

if TYPE_CHECKING:
    from playwright.sync_api import Page

RECORDER_JS = script("recorder")
WATCH_JS = script("recorder_watch")
FLUSH_JS = script("recorder_flush")
RESTART_JS = script("recorder_restart")
LIVE_MARKER_JS = script("live_marker")
LIVE_MARKER = "sg-kit-recorder-is-live"
EXCERPT_CHARS = 160
"""The recorded text kept on each side of a marker the page showed."""


@dataclass(frozen=True)
class Sighting:
    """A watched string (a marker, the flow's canary) the page showed, first time only."""

    text: str
    at_ms: float  # when the recorder saw it, ms since its document started
    screenshot: bytes | None  # the page just after (the first sighting of a recording only)


class DomRecording:
    """Everything a page ever shows, from the kit's recorder (install before the first goto).

    Usable on its own by any Playwright suite: `DomRecording(page)`, then `text()`. A page
    reused for the next test calls `restart()` before it navigates: what the documents it
    showed so far report from then on (a late batch of the document it leaves) is dropped.
    `watch(needles)`, for this document and every later one: each needle's first sighting
    is kept, the first of all with a screenshot taken as soon as the recorder reports it (a
    string shown for less time than that takes may be gone from it; the recorded text still
    has it).
    """

    def __init__(self, page: Page) -> None:
        self._page = page
        self._chunks: list[tuple[str, str]] = []
        self._retired: set[str] = set()
        self.sightings: list[Sighting] = []
        self._needles: tuple[str, ...] = ()
        page.expose_binding("__sgKitRecord", self._record)  # pyright: ignore[reportUnknownMemberType]
        page.expose_binding("__sgKitWatched", self._watched)  # pyright: ignore[reportUnknownMemberType]
        page.expose_binding("__sgKitSighted", self._sighted)  # pyright: ignore[reportUnknownMemberType]
        page.add_init_script(RECORDER_JS)

    def _watched(self, _source: object) -> list[str]:
        return list(self._needles)

    def _sighted(self, _source: object, document: object, text: object, at: object) -> None:
        if str(document) in self._retired:
            return
        shot = None
        if not self.sightings:
            try:
                shot = self._page.screenshot()
            except Exception:  # a page closing or navigating: the text is the evidence
                shot = None
        at_ms = float(at) if isinstance(at, int | float) else 0.0
        self.sightings.append(Sighting(str(text), at_ms, shot))

    def watch(self, needles: tuple[str, ...]) -> None:
        """Report the first sighting of each of `needles`, in the current document and in
        every later one (a page that navigates or reloads)."""
        self._needles = needles
        self._page.evaluate(WATCH_JS, list(needles))

    def _record(self, _source: object, document: object, text: object) -> None:
        if str(document) not in self._retired:
            self._chunks.append((str(document), str(text)))

    def restart(self) -> None:
        """Forget everything recorded so far, and every document that recorded it."""
        current = self._page.evaluate(RESTART_JS)
        self._retired.update(document for document, _ in self._chunks)
        if isinstance(current, str):
            self._retired.add(current)
        self._chunks = []
        self.sightings = []

    def text(self) -> str:
        """Everything recorded so far, as one text (flushes the recorder first)."""
        self._page.evaluate(FLUSH_JS)
        return "\n".join(text for _, text in self._chunks)

    def prove_live(self) -> None:
        """The positive control: a node added to the page must reach the recorder."""
        self._page.evaluate(LIVE_MARKER_JS, LIVE_MARKER)
        if LIVE_MARKER not in self.text():
            raise AssertionError("the DOM recorder is not live: it missed the kit's own marker")


def page_text(read: Callable[[], str]) -> str:
    """What `read()` returns, or why it could not (a closed or broken page must not hide
    the rest of a failure's evidence)."""
    try:
        return read()
    except Exception as exc:
        return f"(the page could not be read: {exc})"


def excerpt(text: str, needle: str, width: int = EXCERPT_CHARS) -> str:
    """`text` around the first `needle` in it ('' when it is not there)."""
    at = text.find(needle)
    return "" if at < 0 else text[max(0, at - width) : at + len(needle) + width]
