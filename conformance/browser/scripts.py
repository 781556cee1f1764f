"""The kit's JavaScript, kept in `.js` files (a room's `js/` folder) and read as text here.

Each file is one function expression that Playwright calls in the page (`page.evaluate`,
`locator.evaluate_all`), a leading `//` comment saying what it returns, or a page script
installed whole (recorder.js). They ship in the wheel beside the modules, and the gate runs
`node --check` on every one (tests/unit/conformance/test_kit_javascript.py).
"""

from __future__ import annotations

from importlib import resources


def script(name: str, room: str = "conformance.browser") -> str:
    """The text of `js/NAME.js` in the package `room`."""
    return resources.files(room).joinpath("js", f"{name}.js").read_text(encoding="utf-8")
