"""`python -m conformance init URL --mock-url MOCK`: the command, from its arguments to the
profile file, read back by the kit's own loader before it is written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from conformance.browser.session import DEFAULT_CHROMIUM, DEFAULT_TURN_TIMEOUT_S
from conformance.init.flows import FLOWS
from conformance.init.probe import InitFailed, Probe
from conformance.init.steps import discover
from conformance.profiles.keys import ProfileError
from conformance.profiles.loader import load_profile
from conformance.profiles.writer import render_profile
from mock_llm.client import MockClient, MockClientError


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m conformance init") -> int:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Write a first kit profile for a chat page wired to the mock.",
    )
    parser.add_argument("url", help="the chat page (the app's model server must be the mock)")
    parser.add_argument("--mock-url", required=True, help="the mock_llm the app talks to")
    parser.add_argument("--out", type=Path, default=Path("profile.toml"), help="profile.toml")
    parser.add_argument("--name", default=None, help="the profile's name (the file's stem)")
    parser.add_argument("--chromium-path", default=DEFAULT_CHROMIUM)
    parser.add_argument("--timeout", type=float, default=DEFAULT_TURN_TIMEOUT_S / 2,
                        help="seconds to wait for each thing to show (30)")  # fmt: skip
    parser.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    args = parser.parse_args(argv)
    if args.out.exists() and not args.force:
        parser.error(f"{args.out} exists (pass --force to overwrite it)")
    try:
        text = run(args)
    except InitFailed as exc:
        print(f"conformance init: {exc}", file=sys.stderr)
        return 1
    args.out.write_text(text, encoding="utf-8")
    print(f"conformance init: wrote {args.out}; check it with\n  pytest conformance"
          f" --app-url {args.url} --mock-url {args.mock_url} --profile {args.out}")  # fmt: skip
    return 0


def run(args: argparse.Namespace) -> str:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    if not Path(args.chromium_path).exists():
        raise InitFailed(f"no browser at {args.chromium_path} (pass --chromium-path)")
    with MockClient(args.mock_url.rstrip("/"), timeout=args.timeout) as mock:
        try:
            mock.add_flows(FLOWS)
        except (MockClientError, OSError) as exc:
            raise InitFailed(f"the mock at {args.mock_url} cannot be reached: {exc}") from exc
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium_path)
            try:
                page = browser.new_page()
                page.set_default_timeout(args.timeout * 1000)
                probe = Probe(page, mock, args.url, args.timeout, lambda line: print(line))
                found = discover(probe)
            except PlaywrightError as exc:
                raise InitFailed(f"the page stopped init: {exc.message.splitlines()[0]}") from exc
            finally:
                browser.close()
    name = args.name or args.out.stem
    text = render_profile(found, name)
    check = args.out.with_name(f".{args.out.name}.check")
    try:
        check.write_text(text, encoding="utf-8")
        load_profile(check)
    except ProfileError as exc:  # a bug of init's own: say so rather than write a bad file
        raise InitFailed(f"the profile init wrote does not load: {exc}") from exc
    finally:
        check.unlink(missing_ok=True)
    return text
