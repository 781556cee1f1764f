"""The kit's own cases (`--cases FILE`): which flows become CASE tests, and bad case files."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from conformance.oracle.cases import CasesError, case_flows, load_case_file, load_cases
from conformance.oracle.clauses import BY_ID
from conformance.profiles.model import DEFAULT_PROFILE
from conformance.report.markdown import render

from ..helpers.files import write

LEAK = """\
flows:
  lfm2-leak:
    description: recorded
    steps:
      - content: "<|tool_call_start|>[read(path='/x.md')]<|tool_call_end|>"
      - content: Backups run nightly.
    expect: {shown: Backups run nightly., recovery: true, stripped_chars: 57, error: null,
             requests: 2}
  no-outcome:
    steps:
      - content: just text
"""


def test_only_the_flows_that_state_an_outcome_become_cases(tmp_path: Path):
    case = load_case_file(write(tmp_path / "leak.yaml", LEAK))
    assert case.flows == ("lfm2-leak",)
    assert case.text == LEAK


def test_a_gzip_compressed_case_file_reads_as_its_text(tmp_path: Path):
    case = load_case_file(write(tmp_path / "leak.yaml.gz", gzip.compress(LEAK.encode())))
    assert case.flows == ("lfm2-leak",)
    assert case.text == LEAK


def test_cases_run_in_the_order_of_the_files_and_their_flows(tmp_path: Path):
    other = LEAK.replace("lfm2-leak", "second-leak")
    files = load_cases([write(tmp_path / "a.yaml", LEAK), write(tmp_path / "b.yaml", other)])
    assert case_flows(files) == ["lfm2-leak", "second-leak"]


def test_a_file_where_no_flow_states_an_outcome_is_refused(tmp_path: Path):
    path = write(tmp_path / "plain.yaml", "flows:\n  a:\n    steps:\n      - content: hi\n")
    with pytest.raises(CasesError, match=r"no flow in the case file .*plain\.yaml states an"):
        load_case_file(path)


def test_an_invalid_flow_file_is_refused_with_its_line(tmp_path: Path):
    path = write(tmp_path / "bad.yaml", "flows:\n  a:\n    steps:\n      - contnt: hi\n")
    with pytest.raises(CasesError, match=r"bad\.yaml:4: .*contnt"):
        load_case_file(path)


@pytest.mark.parametrize(
    ("name", "content"),
    [("missing.yaml", None), ("broken.yaml.gz", b"not gzip"), ("latin.yaml", b"flows: caf\xe9")],
)
def test_an_unreadable_case_file_is_refused_naming_it(
    tmp_path: Path, name: str, content: bytes | None
):
    path = tmp_path / name if content is None else write(tmp_path / name, content)
    with pytest.raises(CasesError, match=rf"cannot read the case file .*{name}"):
        load_case_file(path)


def test_the_same_case_in_two_files_is_refused(tmp_path: Path):
    paths = [write(tmp_path / "a.yaml", LEAK), write(tmp_path / "b.yaml", LEAK)]
    with pytest.raises(CasesError, match=r"'lfm2-leak' is in two case files"):
        load_cases(paths)


def test_the_report_lists_the_case_clause_only_when_cases_ran():
    without = render({"G1": ["passed"]}, None, DEFAULT_PROFILE)
    assert "| CASE |" not in without
    with_cases = render({"CASE": ["failed"]}, None, DEFAULT_PROFILE)
    assert f"| CASE | {BY_ID['CASE'].title} | failed | 1 failed |" in with_cases
