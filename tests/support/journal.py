"""The mock's request journal as tests read it: one read, or a poll until it has settled.

The mock finishes a journal entry after the last byte of its response went out, so a client
that has read a whole stream can still see its entry `in_progress`, and one that left early
sees it until the mock notices. A test therefore never asserts on an entry still in flight:
`settled_journal` polls `GET /_mock/requests?key=KEY` until the KEY has at least `count`
entries and none is `in_progress`, under DEADLINE_S, and fails with what it last saw if that
never happens. How soon an outcome appears is never asserted, only which outcome it is.

Entries come typed, as the mock's client reads them (`mock_llm.client.JournalRecord`).
Async (an httpx.AsyncClient on the mock) for the integration layer; sync (the mock's URL) for
the browser layer, whose Playwright sync API holds the test thread's event loop.
"""

from __future__ import annotations

import asyncio
import time

import httpx

from mock_llm.client import JournalRecord, journal_read

from .deadlines import DEADLINE_S, POLL_S

Entry = JournalRecord
REQUESTS = "/_mock/requests"


def _settled(entries: list[Entry], count: int) -> bool:
    return len(entries) >= count and all(e.outcome != "in_progress" for e in entries)


def _not_settled(key: str, count: int, entries: list[Entry]) -> AssertionError:
    outcomes = [e.outcome for e in entries]
    return AssertionError(
        f"journal of KEY {key} did not settle within {DEADLINE_S:g} s "
        f"(wanted at least {count} finished entries, last saw outcomes {outcomes})"
    )


async def journal(http: httpx.AsyncClient, key: str) -> list[Entry]:
    """The KEY's entries as they are now, in arrival order (`http` is a client on the mock)."""
    response = await http.get(REQUESTS, params={"key": key})
    response.raise_for_status()
    return list(journal_read(response.json()).requests)


async def settled_journal(http: httpx.AsyncClient, key: str, count: int = 1) -> list[Entry]:
    """The KEY's entries once there are at least `count` and none is still in progress."""
    entries: list[Entry] = []
    try:
        async with asyncio.timeout(DEADLINE_S):
            while True:
                entries = await journal(http, key)
                if _settled(entries, count):
                    return entries
                await asyncio.sleep(POLL_S)
    except TimeoutError:
        raise _not_settled(key, count, entries) from None


def journal_sync(mock_url: str, key: str) -> list[Entry]:
    """`journal`, blocking, for a test thread that cannot await."""
    response = httpx.get(f"{mock_url}{REQUESTS}", params={"key": key}, timeout=DEADLINE_S)
    response.raise_for_status()
    return list(journal_read(response.json()).requests)


def settled_journal_sync(mock_url: str, key: str, count: int = 1) -> list[Entry]:
    """`settled_journal`, blocking, for a test thread that cannot await."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        entries = journal_sync(mock_url, key)
        if _settled(entries, count):
            return entries
        if time.monotonic() > deadline:
            raise _not_settled(key, count, entries)
        time.sleep(POLL_S)
