"""`scaffold-guard kit`: the conformance kit's two commands under one name.

- `kit init URL --mock-url MOCK` writes a first profile for a chat page (`python -m
  conformance init`);
- `kit run [pytest options]` runs the kit: exactly `python -m pytest --pyargs conformance
  [options]`, which replaces this process (so pytest imports the kit itself, as it rewrites its
  asserts, and the exit status is pytest's); `kit run --help` is pytest's own help, whose
  "conformance" group lists the kit's every option.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def usage(prog: str) -> str:
    from conformance.profiles.builtin import built_in_profiles

    return "\n".join(
        [
            f"usage: {prog} init URL --mock-url MOCK [--out profile.toml] [...]",
            f"       {prog} run [--app-url URL --mock-url MOCK] [--profile NAME|FILE] [...]",
            "",
            "init  write a first profile for a chat page wired to the mock",
            "run   run the conformance kit (pytest --pyargs conformance); with no target it",
            "      starts the mock and the reference app and checks them",
            "",
            f"built-in profiles (--profile): {', '.join(built_in_profiles())}",
            f"{prog} init --help and {prog} run --help list every option.",
        ]
    )


def main(argv: Sequence[str], *, prog: str = "scaffold-guard kit") -> int:
    args = list(argv)
    if args[:1] == ["init"]:
        from conformance.init.command import main as init

        return init(args[1:], prog=f"{prog} init")
    if args[:1] == ["run"]:
        command = [sys.executable, "-m", "pytest", "--pyargs", "conformance", *args[1:]]
        os.execv(sys.executable, command)
    help_asked = args[:1] in (["-h"], ["--help"])
    print(usage(prog), file=sys.stdout if help_asked else sys.stderr)
    return 0 if help_asked else 2
