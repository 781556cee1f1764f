"""shadow-leak: the raw answer is drawn in an open shadow root on the answer element.

The server keeps the whole guardrail and its `delta` frames are `good`'s (filtered), so the
answer element's own text (its light DOM, textContent) is exactly `good`'s at every moment.
Besides, every piece of the model's answer text also goes out raw in a `raw` frame, and the
page draws those in an open shadow root it attaches to the answer element: what the user
sees there is the model's markup (the shadow root shows the raw text, not the light-DOM
answer). Mutations inside a shadow root never reach a MutationObserver on the document,
so only a recorder that also watches shadow roots (or a check that looks into them) sees it.

Must fail: NEVER. Also fails G13, which holds a family's markup to the same rule: the raw
DSML is in the shadow root too.
"""

from __future__ import annotations

from .base import BaseTarget, Frame, delta

MODE = "shadow-leak"
BREAKS = ("NEVER",)
ALSO_FAILS = ("G13",)


class Target(BaseTarget):
    MODE = MODE
    PAGE_HOOKS = """{
      raw(view, text) {
        if (!view.answer.shadowRoot) {
          const shadow = view.answer.attachShadow({ mode: "open" });
          const pre = document.createElement("pre");
          pre.className = "raw-answer";
          pre.style.whiteSpace = "pre-wrap";
          pre.style.margin = "0";
          shadow.append(pre);
        }
        view.answer.shadowRoot.querySelector(".raw-answer").textContent += text;
      },
    }"""

    def content_frames(self, raw: str, shown: str) -> list[Frame]:
        frames: list[Frame] = [{"type": "raw", "text": raw}] if raw else []
        return [*frames, delta(shown)] if shown else frames
