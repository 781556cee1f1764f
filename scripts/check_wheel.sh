#!/usr/bin/env bash
# The package as another project gets it: build the wheel, check what it holds
# (scripts/wheel_contents.py: every checkout file of its packages, no other top-level name, no
# server framework without an extra, the `scaffold-guard` command), then install it into fresh
# virtual environments outside the checkout and use it from a project of a user's own, which
# has packages named `app` and `integrations` (the wheel must not shadow them):
#
# 1. a bare install (`pip install scaffold-guard`): the filter and the transport work, no
#    server framework came with it, `scaffold-guard --help` lists every part, and a part
#    whose extra is missing says which one (scripts/wheel_smoke.py bare);
# 2. `uvx scaffold-guard guard --upstream URL` from the wheel, no extra: the proxy uvx starts
#    in a tool environment of its own (served by asyncio and h11, guard/bare) guards a leak
#    of the mock's;
# 3. every extra (`scaffold-guard[all]`): `scaffold-guard mock` and `scaffold-guard guard`
#    served, the transport and the proxy each strip a leak the mock sends straight
#    (wheel_smoke.py served), then `scaffold-guard kit run` against the reference app it
#    starts (the app, its page, its sample notes and the mock all from the wheel).
#
# The kit run plays the clauses that use each part of the kit a wheel could lose (the browser
# driver and its scripts, the recorder, the report, the built-in profile, the mock's flows):
# a clean turn (G1), the error display (G3), the thinking display (G9), Stop (G11) and the
# recording (NEVER). Every clause's verdict is the gate's in-process kit run's; here the
# question is only whether the installed kit runs, and the file check answers for the rest.
# Usage: scripts/check_wheel.sh [pytest arguments for the kit run]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
PARTS="g1_ or g3_ or g9_ or g11_ or never"
DEADLINE_S=60

uv build --quiet --wheel --out-dir "$work/dist" "$root"
wheel=$(ls "$work"/dist/*.whl)
uv run --frozen --project "$root" python "$root/scripts/wheel_contents.py" "$wheel"

project="$work/project"
mkdir -p "$project/app" "$project/integrations"
echo "NAME = \"the project's own app\"" >"$project/app/__init__.py"
echo "NAME = \"the project's own integrations\"" >"$project/integrations/__init__.py"
cp "$root/scripts/wheel_smoke.py" "$project/wheel_smoke.py"
cd "$project"

# serve NAME LOGFILE CMD...: start CMD in the background; prints the URL of its start line
# (`... on http://127.0.0.1:PORT ...`) once it has one, failing after DEADLINE_S.
serve() {
    local name=$1 log=$2 url=""
    shift 2
    "$@" >"$log" 2>&1 &
    pids+=("$!")
    for _ in $(seq $((DEADLINE_S * 10))); do
        url=$(grep -oE 'on http://127\.0\.0\.1:[0-9]+' "$log" | head -1 | cut -c4-) || true
        if [ -n "$url" ]; then
            echo "$url"
            return 0
        fi
        sleep 0.1
    done
    echo "check_wheel: $name printed no start line within ${DEADLINE_S} s:" >&2
    cat "$log" >&2
    return 1
}

# 1. A bare install.
uv venv --quiet --python 3.11 "$work/bare"
uv pip install --quiet --python "$work/bare/bin/python" "$wheel"
"$work/bare/bin/python" wheel_smoke.py bare
# Into a file, not a pipe: grep -q leaves at its first match, and the command, still writing,
# would die of the closed pipe (a failure that depends on timing).
"$work/bare/bin/scaffold-guard" --help >"$work/help.txt"
grep -q "^  guard " "$work/help.txt"
grep -q "mock .*\[mock\]" "$work/help.txt"
if "$work/bare/bin/scaffold-guard" mock --help 2>"$work/needs.txt"; then
    echo "check_wheel: a bare install ran the mock without its extra" >&2
    exit 1
fi
grep -q "needs the 'mock' extra" "$work/needs.txt"

# 3 (first its venv and its mock, which step 2 uses too).
uv venv --quiet --python 3.11 "$work/venv"
uv pip install --quiet --python "$work/venv/bin/python" "$wheel[all]"
mock_url=$(serve mock "$work/mock.log" "$work/venv/bin/scaffold-guard" mock --port 0)

# 2. uvx, from the wheel with no extra, in a tool environment of its own.
uvx_url=$(UV_TOOL_DIR="$work/tools" serve "uvx guard" "$work/uvx.log" \
    uvx --quiet --from "$wheel" scaffold-guard guard --upstream "$mock_url/v1" --port 0)
grep -q "served by asyncio and h11" "$work/uvx.log"
"$work/bare/bin/python" wheel_smoke.py served "$mock_url" "$uvx_url"

# 3. Every extra: the mock and the proxy served by the command, then the kit.
guard_url=$(serve guard "$work/guard.log" \
    "$work/venv/bin/scaffold-guard" guard --upstream "$mock_url/v1" --port 0)
"$work/venv/bin/python" wheel_smoke.py served "$mock_url" "$guard_url"
"$work/venv/bin/scaffold-guard" kit run -p no:cacheprovider -q -k "$PARTS" "$@"
