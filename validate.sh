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
# The gate starts a few hundred Python processes (xdist workers, kit runs, the app and the
# mock as subprocesses). With PYTHONDONTWRITEBYTECODE set, as some machine images do, each
# would compile the project and rewrite the test modules again; the first one caches them.
unset PYTHONDONTWRITEBYTECODE

results=()
failed=0
# record NAME STARTED RC: one summary line for a finished step.
record() {
    if [ "$3" -eq 0 ]; then
        results+=("$(printf 'ok    %4ss  %s' $((SECONDS - $2)) "$1")")
    else
        results+=("$(printf 'FAIL  %4ss  %s' $((SECONDS - $2)) "$1")")
        failed=1
    fi
}
step() {
    local name=$1
    shift
    echo "==> $name: $*"
    local started=$SECONDS rc=0
    "$@" || rc=$?
    record "$name" "$started" "$rc"
}

# A step started in the background, for a single-process step that can share the two cores
# with the next one; finish_background waits for it, prints its output and records it.
background() {
    bg_name=$1
    shift
    bg_log=$(mktemp)
    bg_started=$SECONDS
    echo "==> $bg_name (in the background): $*"
    "$@" >"$bg_log" 2>&1 &
    bg_pid=$!
}
finish_background() {
    local rc=0
    wait "$bg_pid" || rc=$?
    echo "==> $bg_name (finished):"
    cat "$bg_log"
    rm -f "$bg_log"
    record "$bg_name (alongside the next step)" "$bg_started" "$rc"
}

step "environment" uv sync --frozen
step "chromium" scripts/ensure_chromium.sh
step "ruff check" uv run --frozen ruff check .
step "ruff format" uv run --frozen ruff format --check .
# pyright and the collection check each use one core: they run side by side.
background "pyright" uv run --frozen pyright
step "stable collection" uv run --frozen python scripts/check_collection.py
finish_background
# The browser suite runs on its own: Playwright's sync API holds an event loop in the
# test thread, which the asyncio tests of the other layers cannot share.
step "unit + integration" uv run --frozen pytest -n 2 tests/unit tests/integration \
    --cov --cov-report= "$@"
# Its tests wait on the browser and the servers much of the time: four workers keep the two
# cores busy (measured without coverage: 140 s at -n 2, 108 s at -n 4, 73 tests).
step "e2e (chromium)" uv run --frozen pytest -n 4 tests/e2e --cov --cov-append --cov-report= "$@"
# Every kit run in the gate gives G11 load-proof slack: its default bound (Stop to the
# mock's disconnect within 1000 ms) was passed once under load (1005 ms), and no verdict here
# may depend on load. 5000 ms still fails a stream that is never closed (it ends
# `completed`, whatever the bound) and one read to its end (the `slow` flow takes 12 s).
KIT_SLACK=(--stop-within-ms 5000)
# The README's kit command: the conformance kit against the mock and the reference app,
# given the recorded leaks of tests/fixtures/cases as its own cases (CASE) too.
step "conformance kit" uv run --frozen pytest conformance "${KIT_SLACK[@]}" \
    --cases tests/fixtures/cases/lfm2-leak.yaml --cov --cov-append --cov-report= "$@"
# The family clauses again, with the reference app asking for a model name that names every
# family: each family flow is then judged stripped (G13), where the run above judged most
# of them as another model's text (G15). Only those tests: the rest is the run above.
step "conformance kit, every family" uv run --frozen pytest conformance "${KIT_SLACK[@]}" \
    -k "g13 or g14 or g15" \
    --reference-model "lfm2 qwen3-coder gemma deepseek gpt-oss glm minimax seed-oss nemotron" \
    --cov --cov-append --cov-report=
# The kit's own self-test: every broken target fails exactly the clauses it breaks, and a
# foreign page passes. Each test is a whole kit run (a subprocess with its browser) that
# spends part of its time waiting on its turns: four workers keep the two cores busy
# (measured: 207 s at -n 3, 158 s at -n 4, 176 s at -n 5).
step "kit self-test (chromium)" uv run --frozen pytest -n 4 tests/conformance_selftest \
    --cov --cov-append --cov-report= "$@"
# One run of the third-party suite: the whole kit against the real Open WebUI (from PyPI,
# installed on first use into a cached venv of its own, never a dependency; about 2 GB and a
# few minutes, once per machine) behind the guard proxy's Ollama route, Open WebUI's default
# connection: every clause the page can be checked on passes. The other routes and LiteLLM's
# proxy are `uv run pytest tests/thirdparty -n 0` (docs/integrations.md). Extra arguments are
# not passed on: this step is one test, named.
step "Open WebUI install (cached)" uv run --frozen python -m tests.thirdparty.venvs open-webui
step "Open WebUI behind the guard (chromium)" uv run --frozen pytest -p no:cacheprovider -n 0 \
    "tests/thirdparty/test_openwebui_kit.py::test_behind_the_guard_proxy_every_clause_the_page_allows_passes[guard-ollama]" \
    --cov --cov-append --cov-report=
step "kit from the wheel" scripts/check_wheel.sh "${KIT_SLACK[@]}"
step "coverage >= 98%" uv run --frozen coverage report --fail-under=98

echo
echo "==> summary"
printf '  %s\n' "${results[@]}"
if [ "$failed" -ne 0 ]; then
    echo "validate.sh: FAILED after ${SECONDS}s"
    exit 1
fi
echo "validate.sh: all green in ${SECONDS}s"
