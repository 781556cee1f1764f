"""Named checks in one test: each check runs, and the test fails once, naming every check
that failed (a test that pins several behaviours of one turn reports each of them)."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager


class Checks:
    def __init__(self) -> None:
        self.failed: dict[str, str] = {}

    @contextmanager
    def check(self, name: str) -> Generator[None]:
        """The block is the check `name`: an assertion that fails in it is kept, not raised."""
        try:
            yield
        except AssertionError as error:
            self.failed[name] = " | ".join(str(error).splitlines()[:3])

    def verify(self) -> None:
        """Fail, naming each check that failed, if any did."""
        assert self.failed == {}
