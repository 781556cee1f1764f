"""What a failing conformance test leaves behind, so a failure can be read without a re-run.

In `<artifacts>/<test id>/`: `dom.txt` (everything the page ever showed, as recorded),
`journal.json` (the mock's entries for the test's turns), `log.txt` (the app log's lines
for those turns, when there is a log) and `trace.zip` (the Playwright trace).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.target import Target

LOG_TAIL_LINES = 200


def folder_name(nodeid: str) -> str:
    return re.sub(r"[^\w.-]+", "_", nodeid).strip("_")[:150]


def page_text(read: Callable[[], str]) -> str:
    """What `read()` returns, or why it could not (a closed or broken page must not hide
    the rest of a failure's evidence)."""
    try:
        return read()
    except Exception as exc:
        return f"(the page could not be read: {exc})"


def keep_evidence(
    nodeid: str,
    target: Target,
    *,
    dom: Callable[[], str],
    keys: Sequence[str],
    trace: Callable[[Path], object] | None,
) -> None:
    """Write the evidence of a failed test: `dom()` is what its page showed, `keys` its
    turns, and `trace(path)` writes its Playwright trace."""
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
