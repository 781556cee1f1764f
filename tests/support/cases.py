"""Check every case of a corpus in one test, and name every case that fails.

A matrix of hundreds of one-line parametrized items costs more in per-item overhead (xdist,
coverage, fixtures, reports) than in its assertions. Folded into one test, each case is
still checked, and a failure still names each failing case and why: `check_each` runs the
check on every case, collects the failed assertions by the case's name, and fails once
with all of them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Iterable
from contextlib import contextmanager
from typing import TypeVar

import pytest

C = TypeVar("C")
FAILED = (AssertionError, pytest.fail.Exception)
"""What a failed check raises: an assertion, or `pytest.raises`/`pytest.fail` giving up."""
MAX_REPORTED_CHARS = 2_000
"""How much of one case's failure the report keeps (an assertion on a long text can be huge)."""


class Failures:
    """The cases checked so far and the assertions that failed, by case name."""

    def __init__(self) -> None:
        self.checked = 0
        self.failed: list[tuple[str, BaseException]] = []

    @contextmanager
    def case(self, name: str) -> Generator[None]:
        """Check one case: a failure inside is kept under `name`, not raised."""
        self.checked += 1
        try:
            yield
        except FAILED as error:
            self.failed.append((name, error))

    def assert_none(self) -> int:
        """Fail naming every failed case; else the number of cases checked."""
        lines = [f"{len(self.failed)} of {self.checked} cases failed:"]
        for name, error in self.failed:
            text = str(error).strip() or type(error).__name__
            lines.append(f"- {name}: {text[:MAX_REPORTED_CHARS]}")
        assert not self.failed, "\n".join(lines)
        return self.checked


def check_each(cases: Iterable[tuple[str, C]], check: Callable[[C], object]) -> int:
    """Run `check` on each `(name, case)`; fail naming every case whose check failed.
    Returns how many cases were checked (a caller can pin it, so no case goes unnoticed)."""
    failures = Failures()
    for name, case in cases:
        with failures.case(name):
            check(case)
    return failures.assert_none()


async def check_each_async(
    cases: Iterable[tuple[str, C]], check: Callable[[C], Awaitable[object]]
) -> int:
    """`check_each` for a check that is a coroutine: the cases run one after another."""
    failures = Failures()
    for name, case in cases:
        with failures.case(name):
            await check(case)
    return failures.assert_none()
