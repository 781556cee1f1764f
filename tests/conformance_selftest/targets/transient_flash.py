"""transient-flash: markup shown while streaming, cleaned away once the turn ends.

The server keeps the whole guardrail (filter, recovery, error frame, log line) but sends
the model's raw answer text in its `delta` frames; its `done` and `error` frames carry the
filtered answer (`answer`), and the page puts that in place of what it streamed. A
`retry` frame clears the answer (the failed round's markup goes away until the recovery
streams). The final DOM is exactly `good`'s, so only a recorder that sees every DOM
mutation from the start catches the markup that was on screen for a moment.

Must fail: NEVER ("not even for a moment while streaming"). Also fails G13, which holds a
family's markup to the same rule: DeepSeek's DSML flashes on screen before it goes.
"""

from __future__ import annotations

from .base import BaseTarget, Frame, TurnRecord, delta

MODE = "transient-flash"
BREAKS = ("NEVER",)
ALSO_FAILS = ("G13",)


class Target(BaseTarget):
    MODE = MODE
    PAGE_HOOKS = """{
      retry(view, frame) {
        view.text = "";
        view.answer.textContent = "";
      },
      end(view, frame) {
        view.text = frame.answer ?? "";
        view.answer.textContent = view.text;
      },
    }"""

    def content_frames(self, raw: str, shown: str) -> list[Frame]:
        return [delta(raw)] if raw else []  # the raw text; the filtered tail was in it

    def end_frame(self, frame: Frame, record: TurnRecord) -> Frame:
        return {**frame, "answer": "".join(record.answer)}
