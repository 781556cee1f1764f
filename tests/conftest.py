"""Root of every test layer: the Hypothesis profiles, the per-test turn KEY, the order
tests are handed out in (`long` ones first) and the sweeps coverage does not measure.

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

Every httpx client (the tests' own, the official SDKs', the recorder's) builds a TLS context
with the CA bundle as it is made, tens of milliseconds of CPU each, though a test only ever
speaks plain HTTP on loopback: about 1,400 of them cost the integration suite over a minute.
Here the clients of a process share one context per set of arguments (`shared_ssl_contexts`).

The `key` fixture names a test's turn on the mock (`[[mock:FLOW#KEY]]`), which isolates it
from every other test on the same server. It is derived from the test's node id, not drawn at
random: unique within a run, the same in every run, so a journal or log line read in a failed
run can be matched to the same KEY in the next.
"""

from __future__ import annotations

import hashlib
import os
import ssl
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import coverage
import httpx
import pytest
from httpx._transports import default as httpx_transports
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


def shared_ssl_contexts(
    create: Callable[..., ssl.SSLContext],
) -> Callable[..., ssl.SSLContext]:
    """`create` (httpx's `create_ssl_context`), made once per set of arguments."""
    made: dict[tuple[Any, ...], ssl.SSLContext] = {}

    def shared(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
        key = (verify, cert, trust_env)
        try:
            return made[key]
        except KeyError:
            made[key] = create(verify=verify, cert=cert, trust_env=trust_env)
            return made[key]
        except TypeError:  # arguments that are no key (a list for `cert`): not shared
            return create(verify=verify, cert=cert, trust_env=trust_env)

    return shared


# The transports call the name they imported: that is the one to replace.
httpx_transports.create_ssl_context = shared_ssl_contexts(httpx.create_ssl_context)  # pyright: ignore[reportPrivateImportUsage]


def pytest_report_header() -> str:
    return f"{PROFILE_ENV}: hypothesis profile {settings.get_current_profile_name()!r}"


@pytest.fixture
def key(request: pytest.FixtureRequest) -> str:
    """This test's turn KEY: `k` and 12 hex digits of a hash of its node id."""
    return "k" + hashlib.blake2b(request.node.nodeid.encode(), digest_size=6).hexdigest()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `long` first, every other one in its place after them.

    xdist hands tests out in collection order: one of the self-test's longest (a kit run
    with every flow, 30-40 s) collected last was started last and ran alone, a core idle for
    its whole length. Started first, the short ones fill in around them. The order is the
    same in every run (a fixed sort of a fixed collection), as xdist and the id check need."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A sweep (`@pytest.mark.sweep`: the same code over every flow, format, chunking or
    corpus entry) runs unmeasured: coverage's tracer makes one two to nine times slower, and
    what a sweep reaches an example test reaches too. The floor in validate.sh keeps that
    true: a line only a sweep reached shows there as missed, and gets an example test (the
    cut inside Mistral's `[ARGS]`, test_scaffolding_profiles.py)."""
    if item.get_closest_marker("sweep") is None:
        return (yield)
    with coverage_paused():
        return (yield)


@contextmanager
def coverage_paused() -> Generator[None]:
    """Every running coverage measurement stopped meanwhile, then started again.

    Not pytest-cov's `no_cover` (regression: the sweeps ran measured under xdist, 20 s for
    the look-alike corpus where 2.5 s unmeasured): an xdist worker is a subprocess, so
    coverage's `patch = ["subprocess"]` has already started a measurement in it when
    pytest-cov starts its own, and `no_cover` stops only pytest-cov's, which resumes the
    other. Coverage keeps its running instances as a stack: stopped from the top, started
    again from the bottom."""
    stopped: list[coverage.Coverage] = []
    while (running := coverage.Coverage.current()) is not None:
        running.stop()
        stopped.append(running)
    try:
        yield
    finally:
        for measurement in reversed(stopped):
            measurement.start()
