"""The report as a page people look at (`--conformance-report FILE.md` writes FILE.html too).

The clause table, then each failure: the kit's message, and for each play it was judged on
the text the contract wants beside what the page showed, each marker the page showed with
the recorded text around it, and the page's screenshot taken as soon as the first one
appeared (conformance/report/evidence.py writes them; `read_evidence` reads them back).

Deliberate choices:
- Everything shown comes from the app's page and the model: it is escaped, and the page's
  Content-Security-Policy lets nothing run and loads nothing but its own inline images.
- Screenshots are inlined (data: URLs), so the page is one file that can be mailed or
  attached to a CI run; the evidence folder is linked for the rest (the trace, the journal).
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import quote

from conformance.oracle.clauses import BY_ID
from conformance.report.evidence import TURNS_FILE
from guardrail.json_shapes import JSONObject, objects

BLANKS = re.compile(r"[ \t]*\n\s*")
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 1.5rem auto; max-width: 72rem;
       padding: 0 1rem; color: #1b1b1b; }
table { border-collapse: collapse; margin: .75rem 0; width: 100%; }
th, td { border: 1px solid #ccc; padding: .3rem .5rem; text-align: left;
         vertical-align: top; }
td.passed { background: #e5f5e5; } td.failed, td.stale { background: #fbe3e3; }
td.not { background: #fff1cc; }
td.skipped, td.expected { background: #f2f2f2; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f7f7f7;
      padding: .5rem; margin: .25rem 0; }
mark { background: #ffd54f; }
img { max-width: 100%; border: 1px solid #999; }
section { border-top: 2px solid #c33; margin-top: 2rem; }
"""


@dataclass(frozen=True)
class Failure:
    """One failed kit test as the controller saw its report."""

    nodeid: str
    clause: str
    verdict: str  # failed | not judged | stale baseline
    message: str
    folder: Path | None = None  # its evidence folder, if it left one
    turns: list[JSONObject] = field(default_factory=list[JSONObject])


def read_evidence(failure: Failure, artifacts: Path, folder_name: str) -> Failure:
    """`failure` with its evidence folder and the plays it was judged on, when it left them."""
    folder = artifacts / folder_name
    if not folder.is_dir():
        return failure
    loaded: object = None
    with contextlib.suppress(OSError, ValueError):  # no turns, or none readable: no plays
        loaded = json.loads((folder / TURNS_FILE).read_text(encoding="utf-8"))
    turns = objects(loaded)
    return replace(failure, folder=folder, turns=turns)


def render_html(
    table: Sequence[tuple[str, str, str, str]],
    failures: Sequence[Failure],
    header: Sequence[str],
    report_dir: Path,
) -> str:
    """The whole page: `table` is the clause table's rows (id, demand, verdict, tests)."""
    esc = html.escape
    out = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        "<title>Guardrail conformance report</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Guardrail conformance report</h1>",
        *(f"<p>{esc(line)}</p>" for line in header),
        "<table><thead><tr><th>clause</th><th>what it demands</th><th>verdict</th>"
        "<th>tests</th></tr></thead><tbody>",
    ]
    for clause, title, verdict, detail in table:
        css = verdict.split()[0]
        out.append(
            f"<tr><td>{esc(clause)}</td><td>{esc(title)}</td>"
            f'<td class="{esc(css)}">{esc(verdict)}</td><td>{esc(detail)}</td></tr>'
        )
    out.append("</tbody></table>")
    out.append(f"<h2>Failures ({len(failures)})</h2>")
    if not failures:
        out.append("<p>None.</p>")
    for number, failure in enumerate(failures, 1):
        out.extend(_failure(number, failure, report_dir))
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _failure(number: int, failure: Failure, report_dir: Path) -> list[str]:
    esc = html.escape
    title = BY_ID[failure.clause].title if failure.clause in BY_ID else "unknown clause"
    out = [
        f'<section id="failure-{number}">',
        f"<h3>{esc(failure.clause)}: {esc(title)} ({esc(failure.verdict)})</h3>",
        f"<p><code>{esc(failure.nodeid)}</code></p>",
        f'<pre class="message">{esc(_summary(failure.message))}</pre>',
        "<details><summary>the whole failure</summary>",
        f"<pre>{esc(failure.message)}</pre></details>",
    ]
    for turn in failure.turns:
        out.extend(_turn(turn, failure.folder))
    if failure.folder is not None:
        files = sorted(p.name for p in failure.folder.iterdir() if p.is_file())
        links = ", ".join(
            f'<a href="{esc(_link(failure.folder / name, report_dir))}">{esc(name)}</a>'
            for name in files
        )
        out.append(f"<p>Evidence: {links}</p>")
    out.append("</section>")
    return out


def _turn(turn: JSONObject, folder: Path | None) -> list[str]:
    esc = html.escape
    expected = turn.get("expected")
    wanted = "(the mock states no outcome)" if expected is None else str(expected)
    if turn.get("expected_error"):
        wanted += "\n(then the malformed-reply error)"
    shown = turn.get("shown")
    showed = f"(no answer: {turn.get('error')})" if shown is None else str(shown)
    if turn.get("message") is False:
        showed = "(no message: the turn ended at an error outside every message)"
    if turn.get("state") == "error":
        showed += f"\n(error shown: {turn.get('error')})"
    out = [
        f"<h4>flow {esc(str(turn.get('flow')))} (KEY {esc(str(turn.get('key')))})</h4>",
        "<table><thead><tr><th>the contract wants</th><th>the page showed</th></tr></thead>",
        f"<tbody><tr><td><pre>{esc(wanted)}</pre></td><td><pre>{esc(showed)}</pre></td></tr>"
        "</tbody></table>",
    ]
    for sighting in objects(turn.get("sighted")):
        text, around = str(sighting.get("text", "")), str(sighting.get("around", ""))
        at_ms = sighting.get("at_ms")
        out.append(
            f"<p>The page showed <code>{esc(text)}</code>"
            f" {float(at_ms) if isinstance(at_ms, int | float) else 0:.0f} ms after its document"
            " started:</p>"
        )
        out.append(f"<pre>{_marked(around, text)}</pre>")
    shot = turn.get("screenshot")
    if isinstance(shot, str) and folder is not None and (folder / shot).is_file():
        data = base64.b64encode((folder / shot).read_bytes()).decode("ascii")
        out.append(
            f'<p><img alt="the page as soon as it showed the first marker"'
            f' src="data:image/png;base64,{data}"></p>'
        )
    return out


def _summary(message: str) -> str:
    """A failure's own lines: pytest's `E` lines (the kit's message), else its first line."""
    lines = [line[1:].strip() for line in message.splitlines() if line.startswith("E ")]
    return "\n".join(line for line in lines if line) or message.strip().split("\n")[0]


def _marked(text: str, needle: str) -> str:
    """`text` escaped, blank runs folded to one line break, each `needle` highlighted."""
    text = BLANKS.sub("\n", text)
    if not needle:
        return html.escape(text)
    return f"<mark>{html.escape(needle)}</mark>".join(html.escape(p) for p in text.split(needle))


def _link(path: Path, report_dir: Path) -> str:
    return quote(os.path.relpath(path, report_dir))
