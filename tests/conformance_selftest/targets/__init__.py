"""Deliberately broken chat apps for the conformance kit's self-test, and a correct one.

Each target is a tiny chat web app over mock_llm (targets.base, targets.page) with the
reference app's page hooks and chat API; each mode breaks one clause of the guardrail
contract (docs/contract.md) and otherwise behaves like `good`. Its module says how:

| mode | breaks | how |
| --- | --- | --- |
| `good` | nothing | the control: a correct guardrail, with a document tool |
| `always-correct` | G1 | the correction line in every request's system message |
| `raw-relay` | NEVER (and G2-G6, G8, G10, G12) | no filter at all |
| `transient-flash` | NEVER | raw deltas on screen, replaced by the clean answer at the end |
| `split-leak` | G5, NEVER | one-character chunks skip the filter; one `<span>` per delta |
| `shadow-leak` | NEVER | the raw text drawn in an open shadow root on the answer |
| `double-recovery` | G2 (and G3, G5) | two corrected recovery requests |
| `no-recovery` | G2 (and G3, G5, G10) | a scaffold-only answer ends `done`, blank |
| `no-error-frame` | G3 | an empty recovery ends `done` instead of the error frame |
| `over-strip` | G7 | look-alikes stripped too |
| `wrong-log-field` | G10 | scaffold_stripped is the last request's count, not the sum |
| `filtered-thinking` | G9 | the reasoning text goes through the filter too |
| `no-stop` | G11 | the upstream stream is read to the end after Stop |
| `recovers-tool-rounds` | G12 | a markup-only tool round gets a recovery, its call dropped |
| `drops-tool-calls` | G14 | a round that stripped markup loses its real tool calls too |
| `eager-profiles` | G15 | every family's markup stripped, whatever the model |

`BREAKS[mode]` holds the clauses a mode is built to fail; `ALSO_FAILS[mode]` the ones it
cannot help failing too (its module docstring says why); every other clause it must pass.
Every target but `always-correct` offers one document tool (`read`, answered with a fixed
result) and runs tool rounds, so G12 applies to it; `PROFILES[mode]` is the kit profile
that describes it (profile.toml, or profile-no-tools.toml for a target without tools).

    with serve_mock() as mock_url, serve_target("split-leak", mock_url, log_file) as url:
        ...  # drive f"{url}/", read the mock's journal at mock_url, read log_file
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import uvicorn
from starlette.applications import Starlette

from servekit.in_thread import serve_in_thread

from . import (
    always_correct,
    double_recovery,
    drops_tool_calls,
    eager_profiles,
    filtered_thinking,
    good,
    no_error_frame,
    no_recovery,
    no_stop,
    over_strip,
    raw_relay,
    recovers_tool_rounds,
    shadow_leak,
    split_leak,
    transient_flash,
    wrong_log_field,
)
from .base import BaseTarget, build_app

__all__ = ["ALSO_FAILS", "BREAKS", "MODES", "PROFILES", "make_target", "serve_target"]

_MODULES: tuple[ModuleType, ...] = (
    good,
    raw_relay,
    transient_flash,
    split_leak,
    shadow_leak,
    double_recovery,
    no_recovery,
    no_error_frame,
    over_strip,
    wrong_log_field,
    no_stop,
    always_correct,
    filtered_thinking,
    recovers_tool_rounds,
    drops_tool_calls,
    eager_profiles,
)
MODES: dict[str, type[BaseTarget]] = {module.MODE: module.Target for module in _MODULES}
BREAKS: dict[str, tuple[str, ...]] = {module.MODE: module.BREAKS for module in _MODULES}
ALSO_FAILS: dict[str, tuple[str, ...]] = {module.MODE: module.ALSO_FAILS for module in _MODULES}
_HERE = Path(__file__).parent
PROFILES: dict[str, Path] = {
    mode: _HERE / ("profile.toml" if target.OFFERS_TOOLS else "profile-no-tools.toml")
    for mode, target in MODES.items()
}


def make_target(mode: str, mock_url: str, log_file: Path) -> Starlette:
    """The ASGI app of target `mode`, whose model is the mock at `mock_url` (no /v1)."""
    try:
        target = MODES[mode]
    except KeyError:
        raise ValueError(f"unknown target mode {mode!r}; known: {', '.join(MODES)}") from None
    return build_app(target(mock_url, log_file))


@contextmanager
def serve_target(mode: str, mock_url: str, log_file: Path) -> Generator[str]:
    """Serve target `mode` in-process on a free 127.0.0.1 port; yields its base URL."""
    app = make_target(mode, mock_url, log_file)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    with serve_in_thread(config) as url:
        yield url
