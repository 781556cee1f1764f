"""Refresh the page's screenshots in docs/images/ (docs/frontend.md shows them).

    uv run python scripts/screenshots.py

Runs what `python -m app` runs with no model configured (the embedded mock with the demo's
flows, the bundled sample notes, a throwaway data folder), opens the page in Debian's
Chromium at a desktop size (1280x800) and a phone size (390x844), asks a plain question,
clicks the "Split markup" example, and saves each screen once both answers are done.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from pathlib import Path

import uvicorn
from playwright.sync_api import Page, expect, sync_playwright

from mock_llm import build_settings, serve_mock
from scaffold_guard.app.cli import DEMO_FLOWS
from scaffold_guard.app.config import load_settings
from scaffold_guard.app.main import create_app
from servekit.in_thread import serve_in_thread

CHROMIUM = "/usr/lib/chromium/chromium"
IMAGES = Path(__file__).resolve().parents[1] / "docs" / "images"
SIZES = {"desktop": (1280, 800), "phone": (390, 844)}
TIMEOUT_MS = 30_000


def play(page: Page) -> None:
    page.fill("[data-testid=chat-input]", "When do backups run?")
    page.keyboard.press("Enter")
    answers = page.locator("[data-testid=message-assistant]")
    expect(answers.first).to_have_attribute("data-state", "done")
    page.get_by_role("button", name="Split markup", exact=True).click()
    expect(answers.nth(1)).to_have_attribute("data-state", "done")


def main() -> int:
    with tempfile.TemporaryDirectory() as data, serve_mock(build_settings((DEMO_FLOWS,))) as mock:
        settings = dataclasses.replace(
            load_settings({"SG_DATA_DIR": data}),
            llm_base_url=f"{mock}/v1",
            embedded_mock_url=mock,
        )
        config = uvicorn.Config(create_app(settings), log_level="warning")
        with serve_in_thread(config) as url, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM)
            for name, (width, height) in SIZES.items():
                context = browser.new_context(viewport={"width": width, "height": height})
                page = context.new_page()
                page.set_default_timeout(TIMEOUT_MS)
                expect.set_options(timeout=TIMEOUT_MS)
                page.goto(url + "/")
                play(page)
                target = IMAGES / f"page-{name}.png"
                page.screenshot(path=target)
                print(f"screenshots: {target.relative_to(IMAGES.parents[1])}", flush=True)
                context.close()
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
