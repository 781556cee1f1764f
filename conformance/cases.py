"""The user's own cases (`--cases FILE`): flows caught once, each checked as its `expect` says.

A case file is a flow file: a recording made with `python -m mock_llm record` (a leak seen
in a real app, say) to which the user added an `expect` block, or one written by hand,
gzip-compressed (`.gz`) or not. Each of its flows that states an expected outcome becomes
one CASE test, named after the flow; flows without one are left out, and a file in which
no flow states one is a usage error (it would test nothing).

Deliberate choices:
- The files are read when the tests are collected, so the test ids are the flows' names
  and stay the same from run to run; an unreadable or invalid file stops the run before
  any turn, with the flow parser's message (file and line).
- The kit adds the flows to the mock when the run starts (`POST /_mock/flows`): the mock
  the app talks to need not have been started with them. The same flow already there (the
  mock was started with `--flows FILE`) is a no-op; a different flow under the same name
  stops the run, since the kit would judge the mock's flow against the file's outcome.
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
