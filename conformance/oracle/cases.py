"""The user's own cases (`--cases FILE`): flows caught once, each checked as its `expect` says.

A case file is a flow file (recorded or written by hand, `.gz` or not); each flow stating
an `expect` is one CASE test, named after the flow. A file where none does is a usage
error (it would test nothing). See docs/conformance.md.

Deliberate choices:
- Files are read at collection, so test ids are the flows' names and stay stable; an
  invalid file stops the run before any turn, with the parser's file and line.
- The kit adds the flows to the mock at start; the same flow already there is a no-op, a
  different one under the same name stops the run (it would judge the wrong flow).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mock_llm.client import FlowFileError, flow_outcomes, read_flow_text


class CasesError(ValueError):
    """A case file cannot be used; the message says which and why."""


@dataclass(frozen=True)
class CaseFile:
    path: Path
    text: str  # the flow file's YAML, decompressed
    flows: tuple[str, ...]  # the flows that state an expected outcome, in file order


def load_case_file(path: Path) -> CaseFile:
    try:
        text = read_flow_text(path)
    except FlowFileError as exc:
        raise CasesError(f"cannot read the case file {path}: {exc.problem}") from exc
    try:
        outcomes = flow_outcomes(text, source=str(path))
    except FlowFileError as exc:
        raise CasesError(f"the case file is not a valid flow file: {exc}") from exc
    stated = tuple(name for name, expect in outcomes.items() if expect is not None)
    if not stated:
        raise CasesError(
            f"no flow in the case file {path} states an expected outcome: add an `expect`"
            " block to the flows the kit should check (see docs/conformance.md, Your own cases)"
        )
    return CaseFile(path, text, stated)


def load_cases(paths: Iterable[Path]) -> tuple[CaseFile, ...]:
    """Every case file, read and checked; CasesError for a bad one or a flow named twice."""
    files = tuple(load_case_file(path) for path in paths)
    seen: dict[str, Path] = {}
    for file in files:
        for name in file.flows:
            if name in seen:
                raise CasesError(
                    f"the flow {name!r} is in two case files: {seen[name]} and {file.path}"
                )
            seen[name] = file.path
    return files


def case_flows(files: Iterable[CaseFile]) -> list[str]:
    """The names of every case, one per test, in the order given."""
    return [name for file in files for name in file.flows]
