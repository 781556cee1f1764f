"""Root of every test layer: the Hypothesis profiles and the per-test turn KEY.

Hypothesis runs under one of three profiles, chosen by SG_HYPOTHESIS_PROFILE (default `ci`
when CI is set, else `dev`):

- `ci`: derandomized (examples come from a hash of each test, and the example database is
  off), so a run can never turn red on an example an earlier run did not try.
- `dev`: random examples and the local example database, to keep finding new cases.
- `thorough`: random and ten times longer, for a deliberate hunt.

No profile has a deadline or the too-slow health check: coverage, xdist and a busy machine
make per-example timings meaningless, and no clock may decide a verdict. Every profile prints
the reproduction blob of a failure. Tests take the profile's example count; a test that
needs more scales it (`settings().max_examples`) rather than fixing a number. Pytest's
header names the profile in use; `--hypothesis-profile NAME` still overrides the choice.

The `key` fixture names a test's turn on the mock (`[[mock:FLOW#KEY]]`), which isolates it
from every other test on the same server. It is derived from the test's node id, not drawn at
random: unique within a run, the same in every run, so a journal or log line read in a failed
run can be matched to the same KEY in the next.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = [
    "pytester"
]  # the kit's hooks are tested in process (tests/unit/conformance/test_kit_plugin.py)

# litellm (the LiteLLM guardrail's tests) fetches its model cost map from GitHub when it is
# imported, unless told to read the copy it ships; a test never leaves loopback.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

PROFILE_ENV = "SG_HYPOTHESIS_PROFILE"
_COMMON = settings(deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])
PROFILES = {
    "ci": settings(_COMMON, derandomize=True),
    "dev": settings(_COMMON),
    "thorough": settings(_COMMON, max_examples=1000),
}


def chosen_profile(environ: Mapping[str, str]) -> str:
    """The profile SG_HYPOTHESIS_PROFILE names, else `ci` under CI, else `dev`."""
    name = environ.get(PROFILE_ENV) or ("ci" if environ.get("CI") else "dev")
    if name not in PROFILES:
        raise pytest.UsageError(f"{PROFILE_ENV}={name!r}: choose one of {', '.join(PROFILES)}")
    return name


for _name, _profile in PROFILES.items():
    settings.register_profile(_name, _profile)
settings.load_profile(chosen_profile(os.environ))


def pytest_report_header() -> str:
    return f"{PROFILE_ENV}: hypothesis profile {settings.get_current_profile_name()!r}"


@pytest.fixture
def key(request: pytest.FixtureRequest) -> str:
    """This test's turn KEY: `k` and 12 hex digits of a hash of its node id."""
    return "k" + hashlib.blake2b(request.node.nodeid.encode(), digest_size=6).hexdigest()
