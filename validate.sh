#!/usr/bin/env bash
# The one gate: lint, format, types, stable test collection, every test suite, the coverage
# floor; under 5 minutes on a warm 2-core machine (docs/benchmarks.md, "The gate"). CI runs
# this, then scripts/slow_suites.sh (the third-party programs and the long fuzz run). On a
# fresh Debian machine it installs what it needs: the project's locked environment (uv sync)
# and Debian's chromium for the browser suites.
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

# shellcheck source=scripts/lib/steps.sh
source scripts/lib/steps.sh

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
# Coverage is measured where it is cheap: the unit and integration suites and the kit's
# in-process runs below. The browser suite and the self-test are not measured (their Python
# is a small part of what they run, and coverage slowed the self-test's kit runs by a
# quarter); the kit's browser rooms, which only the self-test reaches whole, are left out of
# the floor ([tool.coverage.report] in pyproject.toml; docs/benchmarks.md, "The gate").
# Its tests wait on the browser and the servers part of the time: four workers keep the two
# cores busy.
step "e2e (chromium)" uv run --frozen pytest -n 4 tests/e2e "$@"
# Every kit run in the gate gives G11 load-proof slack: its default bound (Stop to the
# mock's disconnect within 1000 ms) was passed once under load (1005 ms), and no verdict here
# may depend on load. 5000 ms still fails a stream that is never closed (it ends
# `completed`, whatever the bound) and one read to its end (the `slow` flow takes 12 s).
KIT_SLACK=(--stop-within-ms 5000)
# The wheel holds every checkout file of its packages, and the kit installed from it into a
# fresh venv runs the clauses that use each of its parts against the reference app.
background "kit from the wheel" scripts/check_wheel.sh "${KIT_SLACK[@]}"
# The family clauses again, with the reference app asking for a model name that names every
# family: each family flow is then judged stripped (G13), where the README's run below judges
# most of them as another model's text (G15). Only those tests: the rest is that run. Beside
# it, with its coverage data and its evidence kept apart (two runs appending to one data file
# at once would race): the floor below combines them. Without Playwright traces, a third of
# a kit run's CPU: the README's run keeps the kit's default and proves them.
families_cov=$(mktemp -d)
background "conformance kit, every family" env COVERAGE_FILE="$families_cov/.coverage" \
    uv run --frozen pytest conformance "${KIT_SLACK[@]}" -k "g13 or g14 or g15" \
    --conformance-trace off \
    --reference-model "lfm2 qwen3-coder gemma deepseek gpt-oss glm minimax seed-oss nemotron mistral kimi llama" \
    --conformance-artifacts conformance-artifacts/every-family --cov --cov-report=
# The README's kit command: the conformance kit against the mock and the reference app,
# given the recorded leaks of tests/fixtures/cases as its own cases (CASE) too: LFM2's
# incident, and the leak a real model wrote through llama.cpp's real server. The three kit
# runs each keep about one core busy, waiting on their pages the rest of the time.
step "conformance kit" uv run --frozen pytest conformance "${KIT_SLACK[@]}" \
    --cases tests/fixtures/cases/lfm2-leak.yaml \
    --cases tests/fixtures/cases/smollm2-llama-server.yaml --cov --cov-append --cov-report= "$@"
finish_background
# The kit's own self-test: every broken target fails exactly the clauses it breaks, and a
# foreign page passes. Each test is a whole kit run (a subprocess with its browser) that
# spends part of its time waiting on its turns: four workers keep the two cores busy.
step "kit self-test (chromium)" uv run --frozen pytest -n 4 tests/conformance_selftest "$@"
step "coverage >= 98%" bash -c 'uv run --frozen coverage combine --append -q "$1/.coverage" &&
    uv run --frozen coverage report --fail-under=98' coverage "$families_cov"

summary validate.sh
