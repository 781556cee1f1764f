"""The HTML report: the clause table, and each failure with what the page showed beside
what the contract wants, the marker in its context and the screenshot, all escaped."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from conformance.profiles.model import DEFAULT_PROFILE
from conformance.report.evidence import TURNS_FILE, folder_name
from conformance.report.html_page import Failure, read_evidence, render_html
from conformance.report.markdown import write_report

PNG = b"\x89PNG\r\n\x1a\n-a-screenshot"
NODEID = "conformance/test_contract.py::test_raw_scaffolding_never_appears_in_the_page[split]"
HOSTILE = "<script>alert(1)</script>"


def turn(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "flow": "scaffold-split",
        "key": "k7",
        "expected": "Backups run nightly.",
        "expected_error": False,
        "shown": f"Backups <|tool_call_start|>[read()] {HOSTILE}",
        "state": "done",
        "error": "",
        "sighted": [{"text": "<|tool_call_start|>", "at_ms": 812.4,
                     "around": f"Backups <|tool_call_start|>[read()] {HOSTILE}"}],
        "screenshot": "sighted-1.png",
    }  # fmt: skip
    return base | changes


def evidence(tmp_path: Path, turns: object) -> Path:
    folder = tmp_path / "artifacts" / folder_name(NODEID)
    folder.mkdir(parents=True)
    (folder / TURNS_FILE).write_text(json.dumps(turns), encoding="utf-8")
    (folder / "sighted-1.png").write_bytes(PNG)
    (folder / "dom.txt").write_text(HOSTILE, encoding="utf-8")
    return folder


def page_for(tmp_path: Path, turns: object) -> str:
    evidence(tmp_path, turns)
    failure = Failure(NODEID, "NEVER", "failed", f"conformance clause NEVER failed: {HOSTILE}")
    found = read_evidence(failure, tmp_path / "artifacts", folder_name(NODEID))
    table = [("NEVER", "raw scaffolding never appears", "failed", "1 failed")]
    return render_html(table, [found], ["Target: http://app/"], tmp_path)


def test_nothing_the_page_or_the_model_wrote_is_left_unescaped(tmp_path: Path):
    page = page_for(tmp_path, [turn()])
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_page_lets_nothing_run_and_loads_only_its_inline_images(tmp_path: Path):
    page = page_for(tmp_path, [turn()])
    assert "default-src &#x27;none&#x27;" not in page  # the policy is written as markup
    assert "content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\"" in page


def test_the_contracts_text_stands_beside_what_the_page_showed(tmp_path: Path):
    page = page_for(tmp_path, [turn()])
    wants = page.index("<pre>Backups run nightly.</pre>")
    showed = page.index("<pre>Backups &lt;|tool_call_start|&gt;[read()]")
    assert wants < showed


def test_the_marker_is_highlighted_in_the_text_around_it_with_when_it_showed(tmp_path: Path):
    page = page_for(tmp_path, [turn()])
    assert "<mark>&lt;|tool_call_start|&gt;</mark>[read()]" in page
    assert "812 ms after its document started" in page


def test_the_screenshot_is_inlined(tmp_path: Path):
    page = page_for(tmp_path, [turn()])
    assert f'src="data:image/png;base64,{base64.b64encode(PNG).decode()}"' in page


def test_the_evidence_files_are_linked_relative_to_the_report(tmp_path: Path):
    page = page_for(tmp_path, [turn()])
    assert f'href="artifacts/{folder_name(NODEID)}/dom.txt"' in page


def test_a_turn_that_never_finished_says_why_instead_of_an_answer(tmp_path: Path):
    stalled = turn(shown=None, state=None, error="the turn never finished", sighted=[],
                   screenshot=None)  # fmt: skip
    page = page_for(tmp_path, [stalled])
    assert "(no answer: the turn never finished)" in page
    assert "<img" not in page


def test_unreadable_turns_leave_the_failure_with_its_message(tmp_path: Path):
    page = page_for(tmp_path, {"not": "a list"})
    assert "conformance clause NEVER failed" in page
    assert "<h4>" not in page


def test_a_run_without_failures_says_none(tmp_path: Path):
    page = render_html([("G1", "clean", "passed", "1 passed")], [], [], tmp_path)
    assert "<h2>Failures (0)</h2>\n<p>None.</p>" in page


def test_the_markdown_and_the_html_report_are_written_side_by_side(tmp_path: Path):
    write_report(tmp_path / "report.md", {"G1": ["passed"]}, target=None, profile=DEFAULT_PROFILE)
    assert (tmp_path / "report.md").read_text(encoding="utf-8").startswith("# Guardrail")
    assert (tmp_path / "report.html").read_text(encoding="utf-8").startswith("<!doctype html>")


def test_a_report_named_html_keeps_the_markdown_beside_it(tmp_path: Path):
    write_report(tmp_path / "kit.html", {"G1": ["passed"]}, target=None, profile=DEFAULT_PROFILE)
    assert (tmp_path / "kit.md").read_text(encoding="utf-8").startswith("# Guardrail")
    assert (tmp_path / "kit.html").read_text(encoding="utf-8").startswith("<!doctype html>")


def test_the_kits_own_lines_lead_and_the_whole_failure_folds_away(tmp_path: Path):
    message = (
        "conformance clause G4 failed: mixed\n\n    def test():\n>       assert x\n"
        "E       AssertionError: flow 'scaffold-mixed': the page showed markup\nE   \n"
        "E       assert False\n"
    )
    failure = Failure(NODEID, "G4", "failed", message)
    page = render_html([], [failure], [], tmp_path)
    summary = (
        "AssertionError: flow &#x27;scaffold-mixed&#x27;: the page showed markup\nassert False"
    )
    assert f'<pre class="message">{summary}</pre>' in page
    assert "<details><summary>the whole failure</summary>\n<pre>conformance clause G4" in page


def test_blank_runs_around_a_marker_fold_to_one_line_break(tmp_path: Path):
    around = "Your question\n\n   \n      <|tool_call_start|>\n\n\nSend"
    page = page_for(tmp_path, [turn(sighted=[{"text": "<|tool_call_start|>", "at_ms": 1,
                                              "around": around}])])  # fmt: skip
    assert "<pre>Your question\n<mark>&lt;|tool_call_start|&gt;</mark>\nSend</pre>" in page


def test_a_turn_that_ended_at_an_outside_error_with_no_message_says_so(tmp_path: Path):
    alone = turn(shown="", state="error", error="Error: the model failed", message=False)
    page = page_for(tmp_path, [alone])
    assert (
        "<pre>(no message: the turn ended at an error outside every message)\n"
        "(error shown: Error: the model failed)</pre>"
    ) in page
