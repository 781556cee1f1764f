#!/usr/bin/env bash
# Make sure Debian's Chromium is installed for the browser tests (the one place that does it).
# Playwright cannot download its own browsers here, so the tests drive /usr/lib/chromium/chromium
# (/usr/bin/chromium is only a wrapper script). As root it installs the package when it is
# missing; otherwise it prints the one command to run and fails.
set -euo pipefail

CHROMIUM=/usr/lib/chromium/chromium
if [ -x "$CHROMIUM" ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "ensure_chromium: $CHROMIUM is missing; run: sudo apt-get update && sudo apt-get install -y chromium" >&2
    exit 1
fi
echo "ensure_chromium: installing Debian's chromium (apt-get)"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
test -x "$CHROMIUM"
