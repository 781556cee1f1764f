"""toast-error: a failed turn shows only a toast outside the thread, and no bubble.

As a page built like Gradio's `gr.ChatInterface` guide shows a failure (`gr.Error`): a toast
in a corner, outside the message list, and no assistant bubble for a turn that showed
nothing yet; an answer cut off midway keeps its bubble, the toast beside it. Its guardrail
is `good`'s. Its profile names the toast as the error display, as a user would write it for
Gradio. The toast stays up (`Left`), or is hidden once the next question is sent
(`Hidden`).

The kit must end such a turn at the toast, in the preflight and in every clause, and the
page must pass every clause it honours.
"""

from __future__ import annotations

from ..targets.base import BaseTarget
from .parts_page import PROFILE, PageOptions, render

ERROR = "[data-testid=toast-body].error [data-testid=toast-text]"


class Left(BaseTarget):
    MODE = "toast-error-left"
    PAGE = render(PageOptions(toast="left"))


class Hidden(BaseTarget):
    MODE = "toast-error-hidden"
    PAGE = render(PageOptions(toast="hidden"))


TARGET_PROFILE = PROFILE.replace('error = ".sp-err"', f'error = "{ERROR}"')
