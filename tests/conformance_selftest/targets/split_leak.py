"""split-leak: markup streamed one character per chunk gets through, one `<span>` each.

The server filters as `good` does, except for a "fast path": a one-character chunk, while
the filter holds nothing back, goes to the page unfiltered, on the reasoning that one
character cannot be a marker. A marker streamed one character per chunk (the
scaffold-split flow) is made of nothing but such chunks, so it all gets through, and
nothing was stripped, so no recovery is sent either. The page puts each delta in its own
`<span>`: no single DOM node, and no single recorded mutation, ever holds a whole marker or
the whole canary; only the answer's text as a whole does. Chunks longer than one
character (every other built-in flow) are filtered correctly.

Must fail: G5 (scaffold-split: the markup is shown, one request, no recovery) and NEVER
(the markup is in the page, in pieces), and nothing else. Its log line is wrong on
scaffold-split too (nothing counted), but the kit's G10 test plays no one-character flow
(clean, scaffold-recover, scaffold-repeat, scaffold-mixed), so G10 passes.
"""

from __future__ import annotations

from .base import BaseTarget, TextFilter, WrappedFilter

MODE = "split-leak"
BREAKS = ("G5", "NEVER")
ALSO_FAILS: tuple[str, ...] = ()


class OneCharBypass(WrappedFilter):
    """A ScaffoldingFilter that single-character chunks skip while it holds nothing."""

    def feed(self, chunk: str) -> str:
        if len(chunk) == 1 and not self._inner.held:
            return chunk  # the bug: "one character cannot be a marker"
        return self._inner.feed(chunk)


class Target(BaseTarget):
    MODE = MODE
    PAGE_HOOKS = """{
      delta(view, text) {
        view.text += text;
        const span = document.createElement("span");
        span.textContent = text;
        view.answer.append(span);
      },
    }"""

    def new_filter(self) -> TextFilter:
        return OneCharBypass()
