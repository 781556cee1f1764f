"""`python -m conformance init URL --mock-url MOCK`: a first profile for a chat page
(conformance/init/). The kit itself runs under pytest: `pytest conformance ...`."""

from __future__ import annotations

import sys

USAGE = (
    "usage: python -m conformance init URL --mock-url MOCK [--out profile.toml]\n"
    "(the kit itself runs under pytest: pytest conformance --app-url URL --mock-url MOCK)"
)


def main(argv: list[str]) -> int:
    if argv[:1] != ["init"]:
        print(USAGE, file=sys.stderr)
        return 2
    from conformance.init.command import main as init

    return init(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
