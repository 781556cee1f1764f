"""What a failing conformance test leaves behind, so a failure can be read without a re-run.

In `<artifacts>/<test id>/`: `dom.txt` (everything the page ever showed, as recorded),
`journal.json` (the mock's entries for the test's turns), `log.txt` (the app log's lines
for those turns, when there is a log), `trace.zip` (the Playwright trace), and for a test
judged on plays `turns.json` (each play's flow, the text the contract wants beside what
the page showed, whether the turn had a message at all (`message`: false for a turn that
ended at an error outside every message, alone), and the markers it showed, each with the
recorded text around it) with
`sighted-N.png`, the page as soon as play N showed its first marker (the HTML report
shows them).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from conformance.browser.recording import excerpt, page_text

if TYPE_CHECKING:
    from conformance.oracle.played import Play
    from conformance.oracle.target import Target

LOG_TAIL_LINES = 200
TURNS_FILE = "turns.json"


def folder_name(nodeid: str) -> str:
    return re.sub(r"[^\w.-]+", "_", nodeid).strip("_")[:150]


def keep_evidence(
    nodeid: str,
    target: Target,
    *,
    dom: Callable[[], str],
    keys: Sequence[str],
    trace: Callable[[Path], object] | None,
    plays: Sequence[Play] = (),
) -> None:
    """Write the evidence of a failed test: `dom()` is what its page showed, `keys` its
    turns, `trace(path)` writes its Playwright trace, and `plays` are the plays it was
    judged on."""
    folder = target.artifacts / folder_name(nodeid)
    folder.mkdir(parents=True, exist_ok=True)
    if trace is not None:
        trace(folder / "trace.zip")
    (folder / "dom.txt").write_text(page_text(dom), encoding="utf-8")
    journal = {
        key: [dataclasses.asdict(entry) for entry in target.upstream.everything(key)]
        for key in keys
    }
    (folder / "journal.json").write_text(json.dumps(journal, indent=2), encoding="utf-8")
    if target.log_file is not None and target.log_file.is_file():
        lines = target.log_file.read_text(encoding="utf-8", errors="replace").splitlines()
        (folder / "log.txt").write_text("\n".join(lines[-LOG_TAIL_LINES:]), encoding="utf-8")
    if plays:
        turns = [_turn(target, play, folder, number) for number, play in enumerate(plays, 1)]
        (folder / TURNS_FILE).write_text(json.dumps(turns, indent=2), encoding="utf-8")


def _turn(target: Target, play: Play, folder: Path, number: int) -> dict[str, object]:
    """One play as turns.json has it; its first sighting's screenshot goes to a file."""
    want = target.upstream.expected(play.flow)
    shot = next((s.screenshot for s in play.sightings if s.screenshot is not None), None)
    if shot is not None:
        (folder / f"sighted-{number}.png").write_bytes(shot)
    view = play.views[0] if play.views else None
    return {
        "flow": play.flow,
        "key": play.key,
        "expected": None if want is None else want.shown,
        "expected_error": want is not None and want.error,
        "shown": None if view is None else view.answer,
        "state": None if view is None else view.state,
        "message": None if view is None else view.has_message,
        "error": play.error if view is None else view.error,
        "sighted": [
            {"text": s.text, "at_ms": round(s.at_ms, 1), "around": excerpt(play.recorded, s.text)}
            for s in play.sightings
        ],
        "screenshot": None if shot is None else f"sighted-{number}.png",
    }
