#!/usr/bin/env bash
# The kit as another project gets it: build the wheel, check that it holds every file the
# packages have in the checkout, install it with its `conformance` extra into a fresh virtual
# environment outside the checkout, and run the kit from there against the reference app
# (which the wheel ships too: the app, its page, its sample notes and the mock). Nothing of
# the checkout is on the path of that run.
#
# The run plays the clauses that use each part of the kit a wheel could lose (the browser
# driver and its scripts, the recorder, the report, the built-in profile, the mock's flows):
# a clean turn (G1), the error display (G3), the thinking display (G9), Stop (G11) and the
# recording (NEVER). Every clause's verdict is the gate's in-process kit run's; here the
# question is only whether the installed kit runs, and the file check answers for the rest.
# Usage: scripts/check_wheel.sh [pytest arguments]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
PARTS="g1_ or g3_ or g9_ or g11_ or never"

uv build --quiet --wheel --out-dir "$work/dist" "$root"
wheel=$(ls "$work"/dist/*.whl)
uv run --frozen --project "$root" python "$root/scripts/wheel_contents.py" "$wheel"
uv venv --quiet --python 3.11 "$work/venv"
uv pip install --quiet --python "$work/venv/bin/python" "$wheel[conformance]"
cd "$work"
"$work/venv/bin/python" -m pytest --pyargs conformance -p no:cacheprovider -q -k "$PARTS" "$@"
