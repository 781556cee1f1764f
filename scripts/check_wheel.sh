#!/usr/bin/env bash
# The kit as another project gets it: build the wheel, install it with its `conformance`
# extra into a fresh virtual environment outside the checkout, and run the kit from there
# against the reference app (which the wheel ships too: the app, its page, its sample notes
# and the mock). Nothing of the checkout is on the path of that run.
# Usage: scripts/check_wheel.sh [pytest arguments]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

uv build --quiet --wheel --out-dir "$work/dist" "$root"
wheel=$(ls "$work"/dist/*.whl)
uv venv --quiet --python 3.11 "$work/venv"
uv pip install --quiet --python "$work/venv/bin/python" "$wheel[conformance]"
cd "$work"
"$work/venv/bin/python" -m pytest --pyargs conformance -p no:cacheprovider -q "$@"
