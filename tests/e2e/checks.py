"""Named checks in one test: each check runs, and the test fails once, naming every check
that failed (a test that pins several behaviours of one turn reports each of them)."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager

from playwright.sync_api import Error as PlaywrightError


class Checks:
    def __init__(self) -> None:
        self.failed: dict[str, str] = {}

    @contextmanager
    def check(self, name: str) -> Generator[None]:
        """The block is the check `name`: an assertion that fails in it, or a page action
        that times out, is kept, not raised."""
        try:
            yield
        except (AssertionError, PlaywrightError) as error:
            self.failed[name] = " | ".join(str(error).splitlines()[:3])

    def verify(self) -> None:
        """Fail, naming each check that failed and how, if any did. (This module is not a
        test module: pytest does not rewrite its asserts, so the message is spelled out.)"""
        if self.failed:
            lines = [f"{name}: {error}" for name, error in self.failed.items()]
            raise AssertionError("checks that failed:\n  " + "\n  ".join(lines))
