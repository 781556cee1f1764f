"""How long a test may wait for something before it fails, and how often it looks.

A deadline only bounds a broken run: a healthy test returns as soon as what it waits for has
happened (a stream ended, a journal entry settled, a page reached a state), so it is generous
on purpose. A loaded machine then makes a test slower, never red. Claims about how fast
something is belong in benchmarks/, not here.
"""

from __future__ import annotations

DEADLINE_S = 60.0
"""The longest any single wait in a test may take (a stream read, a poll, a page state).

20 s was not enough: with the 2-core machine oversubscribed tenfold (load average 20), a
`python -m app` child took longer than that to print its first line, and a browser turn to
finish. A minute only ever delays the report of a run that is broken anyway."""

POLL_S = 0.02
"""The pause between two looks of a poll; it bounds nothing."""
