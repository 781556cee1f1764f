"""Files generated from others are what their generator writes today: the sync transport
from the async one (scripts/unasync_transport.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ...support.deadlines import DEADLINE_S

ROOT = Path(__file__).resolve().parents[3]


def test_the_sync_transport_is_the_async_one_generated():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "unasync_transport.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
