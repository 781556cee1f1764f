"""servekit.request_body: a body read whole within its bounds, from fake ASGI messages."""

from __future__ import annotations

import asyncio

import pytest
from starlette.types import Message, Receive

from servekit.request_body import (
    BodyTimeout,
    BodyTooLarge,
    check_declared_length,
    read_body,
)

DEADLINE_S = 5.0


def receiving(messages: list[Message], hang: bool = False) -> Receive:
    """A `receive` that gives `messages`, then waits forever (`hang`) or says disconnect."""
    pending = list(messages)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        if hang:
            await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    return receive


def piece(body: bytes, more: bool) -> Message:
    return {"type": "http.request", "body": body, "more_body": more}


async def read(receive: Receive, max_bytes: int | None, timeout_s: float | None):
    async with asyncio.timeout(DEADLINE_S):
        return await read_body(receive, max_bytes, timeout_s)


async def test_a_body_in_pieces_is_joined_whole() -> None:
    receive = receiving([piece(b"ab", True), piece(b"", True), piece(b"cd", False)])
    assert await read(receive, 4, 1.0) == (b"abcd", None)


async def test_a_disconnect_before_the_last_piece_is_given_back_with_what_came() -> None:
    body, early = await read(receiving([piece(b"ab", True)]), None, None)
    assert (body, early) == (b"ab", {"type": "http.disconnect"})


async def test_a_body_that_grows_past_the_bound_is_too_large() -> None:
    receive = receiving([piece(b"abc", True), piece(b"de", False)])
    with pytest.raises(BodyTooLarge) as refused:
        await read(receive, 4, None)
    assert (refused.value.status, refused.value.message) == (
        413,
        "The request body is larger than 4 bytes.",
    )


async def test_a_body_exactly_at_the_bound_is_taken() -> None:
    assert await read(receiving([piece(b"abcd", False)]), 4, None) == (b"abcd", None)


async def test_a_body_that_stops_arriving_times_out() -> None:
    receive = receiving([piece(b"ab", True)], hang=True)
    with pytest.raises(BodyTimeout) as refused:
        await read(receive, None, 0.01)
    assert (refused.value.status, refused.value.message) == (
        408,
        "The request body did not arrive within 0.01 s.",
    )


@pytest.mark.parametrize("declared", ["5", b"5", "100000000000000000000"])
def test_a_declared_length_over_the_bound_is_too_large_unread(declared: str | bytes) -> None:
    with pytest.raises(BodyTooLarge):
        check_declared_length(declared, 4)


@pytest.mark.parametrize(
    ("declared", "bound"), [("4", 4), ("", 4), ("-9", 4), ("x", 4), ("9", None)]
)
def test_a_declared_length_within_the_bound_or_unreadable_is_left_to_the_read(
    declared: str, bound: int | None
) -> None:
    check_declared_length(declared, bound)
