#!/usr/bin/env bash
# Make sure Debian's Chromium is installed for the browser tests (the one place that does it):
# its headless shell, which the kit and the browser suites drive (a third less CPU than the
# full browser; conformance/browser/session.py), and the full browser, which the docs'
# screenshots use and the kit falls back to. Playwright cannot download its own browsers here,
# so the tests drive the binaries under /usr/lib/chromium/ (/usr/bin/chromium is only a wrapper
# script). As root it installs the packages when one is missing; otherwise it prints the one
# command to run and fails.
set -euo pipefail

BINARIES=(/usr/lib/chromium/chromium /usr/lib/chromium/chromium-headless-shell)
PACKAGES=(chromium chromium-headless-shell)
missing=0
for binary in "${BINARIES[@]}"; do
    [ -x "$binary" ] || missing=1
done
if [ "$missing" -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "ensure_chromium: a browser is missing; run: sudo apt-get update && sudo apt-get install -y ${PACKAGES[*]}" >&2
    exit 1
fi
echo "ensure_chromium: installing Debian's ${PACKAGES[*]} (apt-get)"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${PACKAGES[@]}" >/dev/null
for binary in "${BINARIES[@]}"; do
    test -x "$binary"
done
