#!/usr/bin/env bash
# The suites worth keeping that are too slow for the gate (./validate.sh, under 5 minutes):
# the third-party programs a user runs in front of a model (Open WebUI, LiteLLM's proxy, each
# installed once per machine into a cached venv of its own under
# ~/.cache/scaffold-guard-thirdparty/, never a dependency; llama.cpp's llama-server built
# there from source with a real model), and the filter's long fuzz run.
# CI runs this after the gate (.ci/run). Everything here is as deterministic as the gate:
# the fuzz run is derandomized (the `ci` profile), only longer.
# Usage: scripts/slow_suites.sh            (everything)
#        scripts/slow_suites.sh -k litellm  (extra arguments go to the third-party pytest)
set -uo pipefail
cd "$(dirname "$0")/.."
export SG_HYPOTHESIS_PROFILE="${SG_HYPOTHESIS_PROFILE:-ci}"
unset PYTHONDONTWRITEBYTECODE
# Fuzz runs of 100 steps each (tests/unit/guardrail/test_scaffolding_fuzz.py); about
# ten minutes on a 2-core machine.
FUZZ_EXAMPLES="${SG_FUZZ_EXAMPLES:-1000}"

# shellcheck source=scripts/lib/steps.sh
source scripts/lib/steps.sh

step "environment" uv sync --frozen
step "chromium" scripts/ensure_chromium.sh
step "build tools (cmake, ninja, g++)" scripts/ensure_build_tools.sh
step "third-party installs (cached)" uv run --frozen python -m tests.thirdparty.venvs \
    open-webui litellm llama-server streamlit gradio chainlit
# One process: the Open WebUI fixtures start the program once per module, and Playwright's
# sync API (the kit runs) wants the test thread's event loop to itself.
step "third-party suites (chromium)" uv run --frozen pytest tests/thirdparty -n 0 \
    -p no:cacheprovider "$@"
step "filter fuzz, ${FUZZ_EXAMPLES} long runs" env SG_FUZZ_EXAMPLES="$FUZZ_EXAMPLES" \
    uv run --frozen pytest tests/unit/guardrail/test_scaffolding_fuzz.py -n 0 \
    -p no:cacheprovider --hypothesis-show-statistics

summary slow_suites.sh
