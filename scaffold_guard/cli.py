"""`scaffold-guard`: one command for every part, each subcommand the `python -m` entry it names.

    scaffold-guard guard --upstream URL        the guard proxy (python -m guard)
    scaffold-guard mock                        the mock LLM server (python -m mock_llm)
    scaffold-guard record --upstream URL --out FILE
                                               a recording proxy (python -m mock_llm record)
    scaffold-guard kit init URL --mock-url MOCK
    scaffold-guard kit run [pytest options]    the conformance kit (pytest --pyargs conformance)
    scaffold-guard app                         the reference notes chat (python -m app)

Each subcommand takes exactly its entry's options (`scaffold-guard guard --help` is
`python -m guard --help`, with the profiles it knows), and each part's code is imported only
when it is chosen: a bare `pip install scaffold-guard` (the filter and the transport) answers
`--help` and, for a part whose extra is missing, one line naming the extra and the command that
installs it, rather than a traceback. The guard needs no extra (a bare install serves it with
asyncio and h11, guard/bare; the `proxy` extra with uvicorn), so `uvx scaffold-guard guard
--upstream URL` runs it. The extras are named in pyproject.toml; `uvx` takes them in the
package's name: `uvx 'scaffold-guard[mock]' mock`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata

DISTRIBUTION = "scaffold-guard"
OWN_PACKAGES = frozenset(
    {"guardrail", "guard", "mock_llm", "conformance", "servekit", "scaffold_guard"}
)
"""The wheel's top-level packages: a module missing outside them is a missing extra."""
EXIT_USAGE = 2


@dataclass(frozen=True)
class Part:
    """A subcommand: where its `main(argv, *, prog)` is, and the extra its imports need
    ('' for none: a bare install runs it)."""

    name: str
    module: str
    function: str
    extra: str
    summary: str


PARTS = (
    Part("guard", "guard.cli", "main", "",
         "the guard proxy in front of a model server (python -m guard; served by uvicorn"
         " with the proxy extra, by asyncio and h11 without it)"),
    Part("mock", "mock_llm.cli", "main", "mock",
         "the mock LLM server, driven by [[mock:FLOW#KEY]] triggers (python -m mock_llm)"),
    Part("record", "mock_llm.cli", "record_main", "mock",
         "a proxy that records an upstream's answers as a flow file (python -m mock_llm record)"),
    Part("kit", "scaffold_guard.kit_command", "main", "kit",
         "the conformance kit: `kit init` writes a page's first profile, `kit run` runs the kit"),
    Part("app", "scaffold_guard.app.cli", "main", "app",
         "the reference notes chat, the embedded demo unless a model is set (python -m app)"),
)  # fmt: skip
BY_NAME = {part.name: part for part in PARTS}


def version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown"


def overview() -> str:
    width = max(len(part.name) for part in PARTS)
    rows = [
        f"  {part.name:<{width}}  {part.summary}" + (f" [{part.extra}]" if part.extra else "")
        for part in PARTS
    ]
    return "\n".join(
        [
            "usage: scaffold-guard {" + ",".join(BY_NAME) + "} [options]",
            "",
            "Keep tool-call markup out of chat answers, and test that an app does.",
            "",
            "subcommands (one with an extra in brackets needs it:"
            " pip install 'scaffold-guard[EXTRA]'):",
            *rows,
            "",
            "scaffold-guard SUBCOMMAND --help lists its every option. Without a subcommand, a",
            "Python app takes the filter and the transport from a bare install: docs/transport.md.",
        ]
    )


def missing_extra(part: Part, error: ModuleNotFoundError) -> str | None:
    """The line that names `part`'s extra, when `error` is a third-party module it lacks."""
    missing = (error.name or "").split(".")[0]
    if not missing or missing in OWN_PACKAGES or not part.extra:
        return None
    return (
        f"scaffold-guard {part.name} needs the {part.extra!r} extra ({missing} is not installed):"
        f" pip install '{DISTRIBUTION}[{part.extra}]',"
        f" or uvx '{DISTRIBUTION}[{part.extra}]' {part.name} ..."
    )


def load(part: Part) -> Callable[..., int]:
    """`part`'s entry point (ModuleNotFoundError when its extra is missing)."""
    entry: Callable[..., int] = getattr(importlib.import_module(part.module), part.function)
    return entry


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(overview())
        return 0 if args else EXIT_USAGE
    if args[0] == "--version":
        print(f"{DISTRIBUTION} {version()}")
        return 0
    part = BY_NAME.get(args[0])
    if part is None:
        print(overview(), file=sys.stderr)
        print(f"\nscaffold-guard: no subcommand {args[0]!r}", file=sys.stderr)
        return EXIT_USAGE
    try:
        entry = load(part)
    except ModuleNotFoundError as error:
        line = missing_extra(part, error)
        if line is None:
            raise
        print(line, file=sys.stderr)
        return EXIT_USAGE
    return entry(args[1:], prog=f"scaffold-guard {part.name}")
