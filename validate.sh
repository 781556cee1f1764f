#!/usr/bin/env bash
# The one gate: lint, format, types, stable test collection, every test suite, the coverage
# floor. CI runs this. On a fresh Debian machine it installs what it needs: the project's
# locked environment (uv sync) and Debian's chromium for the browser suite.
# Usage: ./validate.sh            (everything)
#        ./validate.sh -k journal  (extra arguments go to pytest)
set -uo pipefail
cd "$(dirname "$0")"
# Property tests run derandomized unless told otherwise, so the gate's verdict never varies
# between runs (SG_HYPOTHESIS_PROFILE=dev or thorough explores new examples).
export SG_HYPOTHESIS_PROFILE="${SG_HYPOTHESIS_PROFILE:-ci}"

results=()
failed=0
step() {
    local name=$1
    shift
    echo "==> $name: $*"
    local started=$SECONDS
    if "$@"; then
        results+=("$(printf 'ok    %4ss  %s' $((SECONDS - started)) "$name")")
    else
        results+=("$(printf 'FAIL  %4ss  %s' $((SECONDS - started)) "$name")")
        failed=1
    fi
}

step "environment" uv sync --frozen
step "chromium" scripts/ensure_chromium.sh
step "ruff check" uv run --frozen ruff check .
step "ruff format" uv run --frozen ruff format --check .
step "pyright" uv run --frozen pyright
step "stable collection" uv run --frozen python scripts/check_collection.py
# The browser suite runs on its own: Playwright's sync API holds an event loop in the
# test thread, which the asyncio tests of the other layers cannot share.
step "unit + integration" uv run --frozen pytest -n 2 tests/unit tests/integration \
    --cov --cov-report= "$@"
step "e2e (chromium)" uv run --frozen pytest -n 2 tests/e2e --cov --cov-append --cov-report= "$@"
# The README's kit command: the conformance kit against the mock and the reference app.
step "conformance kit" uv run --frozen pytest -n 2 conformance --cov --cov-append --cov-report= \
    "$@"
# The kit's own self-test: every broken target fails exactly the clauses it breaks, and a
# foreign page passes. Each test is a whole kit run (a subprocess with its browser) that
# spends part of its time waiting on its turns, so three workers keep two cores busy.
step "kit self-test (chromium)" uv run --frozen pytest -n 3 tests/conformance_selftest \
    --cov --cov-append --cov-report= "$@"
step "kit from the wheel" scripts/check_wheel.sh
step "coverage >= 98%" uv run --frozen coverage report --fail-under=98

echo
echo "==> summary"
printf '  %s\n' "${results[@]}"
if [ "$failed" -ne 0 ]; then
    echo "validate.sh: FAILED after ${SECONDS}s"
    exit 1
fi
echo "validate.sh: all green in ${SECONDS}s"
