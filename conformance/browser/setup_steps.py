"""The profile's set-up steps run on the page: `[[setup]]` before every play, and
`[[setup_once]]` once per browser context, which may also send HTTP requests.

A once step is for what the app keeps on its server or in the browser between pages: a
user setting (Open WebUI shows reasoning only when one is on), a dismissed tour, a model
chosen once. HTTP steps go through the context's request API, so they carry its cookies.

Deliberate choices:
- The once steps run on the chat page, loaded first, so that a header can name a token the
  page keeps (`{local_storage:KEY}`, `{cookie:NAME}`) and a page step finds its page.
- A request answered outside 200-299, or a placeholder with nothing behind it, stops the
  run (`SetupFailed`): a setting that did not take would surface later as a clause's false
  alarm, far from its cause.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from conformance.browser.scripts import script
from conformance.profiles.model import HttpStep, SetupStep

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Locator, Page

PLACEHOLDER = re.compile(r"\{(local_storage|cookie):([^{}]+)\}")
BODY_EXCERPT_CHARS = 300
LOCAL_STORAGE_ITEM_JS = script("local_storage_item")


class SetupFailed(RuntimeError):
    """A set-up step could not be done; the message names the step and what went wrong."""


def fill_placeholders(text: str, read: Callable[[str, str], str | None], key: str) -> str:
    """`text` with each `{local_storage:KEY}` / `{cookie:NAME}` replaced by `read(kind,
    name)`; SetupFailed names the first with nothing behind it."""

    def value(found: re.Match[str]) -> str:
        kind, name = found[1], found[2]
        got = read(kind, name)
        if got is None:
            where = "localStorage" if kind == "local_storage" else "cookies"
            raise SetupFailed(f"{key}: the page's {where} has no {name!r} (after loading it)")
        return got

    return PLACEHOLDER.sub(value, text)


def run_page_step(page: Page, step: SetupStep) -> None:
    """One page step: `step.action` on the first element matching its selector."""
    target = page.locator(step.selector).first
    if step.action == "click_if_visible":
        if shows_within(target, step.within_ms):
            target.click()
    elif step.action == "click":
        target.click()
    elif step.action == "wait_for":
        target.wait_for(state="visible")
    elif step.action == "fill":
        target.fill(step.value or "")
    else:
        target.select_option(step.value)


def shows_within(target: Locator, within_ms: int) -> bool:
    """Whether `target` shows within `within_ms` (0: whether it shows now)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    if within_ms == 0:
        return target.is_visible()
    try:
        target.wait_for(state="visible", timeout=within_ms)
    except PlaywrightTimeoutError:
        return False
    return True


def run_http_step(
    context: BrowserContext, page: Page, app_url: str, step: HttpStep, key: str
) -> None:
    """Send one HTTP step with the context's cookies; SetupFailed unless it got a 2xx."""
    url = urljoin(app_url, step.url)

    def read(kind: str, name: str) -> str | None:
        if kind == "local_storage":
            got = page.evaluate(LOCAL_STORAGE_ITEM_JS, name)
            return got if isinstance(got, str) else None
        return next((c.get("value") for c in context.cookies(url) if c.get("name") == name), None)

    headers = {
        name: fill_placeholders(value, read, f"{key}.headers.{name}")
        for name, value in step.headers
    }
    data: str | None = step.body
    if step.json is not None:
        data = json.dumps(step.json)
        if not any(name.lower() == "content-type" for name in headers):
            headers["Content-Type"] = "application/json"
    response = context.request.fetch(url, method=step.method, headers=headers, data=data)
    if not response.ok:
        excerpt = response.text()[:BODY_EXCERPT_CHARS]
        raise SetupFailed(
            f"{key}: {step.method} {url} answered HTTP {response.status}: {excerpt!r}"
        )


def run_once(
    context: BrowserContext, page: Page, app_url: str, steps: tuple[SetupStep | HttpStep, ...]
) -> None:
    """The profile's once-per-context steps, in order, on the chat page loaded first."""
    from playwright.sync_api import Error as PlaywrightError

    page.goto(app_url)
    for index, step in enumerate(steps):
        key = f"setup_once[{index}]"
        try:
            if isinstance(step, HttpStep):
                run_http_step(context, page, app_url, step, key)
            else:
                run_page_step(page, step)
        except PlaywrightError as exc:
            what = f"{step.method} {step.url}" if isinstance(step, HttpStep) else step.action
            target = "" if isinstance(step, HttpStep) else f" {step.selector!r}"
            raise SetupFailed(f"{key} ({what}{target}): {exc.message.splitlines()[0]}") from exc
