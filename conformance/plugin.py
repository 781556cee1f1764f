"""The kit as a pytest plugin: options, the target, the browser, preflight, baselines, report.

Loaded through the `pytest11` entry point (installed with the project's wheel), so
`pytest conformance` in a checkout and `pytest --pyargs conformance` after `pip install`
both work. It stays inert for test runs that collect no conformance test: options are
registered, but nothing starts and no report is written.

Target: `--app-url` and `--mock-url` (or CONFORMANCE_APP_URL / CONFORMANCE_MOCK_URL) name
an app whose model is that mock; with neither, each worker starts the mock and the
reference app itself. `--profile FILE` describes a page that is not the reference one.

Deliberate choices:
- The preflight fails the whole run with one line (pytest.exit) when the page, the mock,
  the browser or the log cannot be reached, or when a first turn does not reach the mock's
  journal: a mis-wired app would otherwise fail every clause with the same riddle.
- A baselined failure is a strict xfail: it passes as expected-to-fail, and a baselined
  clause that now passes fails the run as a stale baseline.
- Turn KEYs are unique per run (a run id plus the test's index), never part of a test id,
  so collection is stable and a long-running external mock never mixes two runs' turns.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from conformance.baseline import Baseline, BaselineError, load_baseline
from conformance.cases import CaseFile, CasesError, case_flows, load_cases
from conformance.clauses import BY_ID
from conformance.profile import DEFAULT_PROFILE, Profile, ProfileError, resolve_profile

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Playwright

    from conformance.page import ChatPage
    from conformance.plays import Play, Plays
    from conformance.upstream import Upstream

DEFAULT_CHROMIUM = "/usr/lib/chromium/chromium"
CLAUSE_PROPERTY = "conformance_clause"
FLOW_PROPERTY = "conformance_flow"
VERDICT_PROPERTY = "conformance_verdict"
TRACE_MODES = ("dom", "screenshots", "off")
RUN_ID = uuid.uuid4().hex[:8]

_OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("--app-url", "CONFORMANCE_APP_URL", "the chat page to check (with --mock-url)"),
    ("--mock-url", "CONFORMANCE_MOCK_URL", "the mock_llm the app talks to (with --app-url)"),
    ("--app-log", "CONFORMANCE_APP_LOG", "the app's log file, for the log clause (G10)"),
    (
        "--profile",
        "CONFORMANCE_PROFILE",
        "a built-in profile (openwebui) or a TOML file describing the page",
    ),
    ("--expected-failures", "CONFORMANCE_EXPECTED_FAILURES", "a baseline of known failures"),
    ("--conformance-report", "CONFORMANCE_REPORT", "write a clause-by-result table (markdown)"),
    ("--chromium-path", "CONFORMANCE_CHROMIUM", f"the browser binary (default {DEFAULT_CHROMIUM})"),
    ("--conformance-artifacts", "CONFORMANCE_ARTIFACTS", "where failing tests leave evidence"),
    (
        "--reference-model",
        "CONFORMANCE_REFERENCE_MODEL",
        "the model name the reference app asks for (without --app-url; default lfm2-1.2b):"
        " its family's flows are judged by G13, the others' by G15",
    ),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "the guardrail conformance kit")
    for flag, env, help_text in _OPTIONS:
        group.addoption(flag, default=None, help=f"{help_text} [env {env}]")
    group.addoption(
        "--conformance-trace",
        choices=TRACE_MODES,
        default=None,
        help="the Playwright trace a failing test leaves: dom (DOM snapshots, the default),"
        " screenshots (DOM snapshots and a filmstrip, slower) or off [env CONFORMANCE_TRACE]",
    )
    group.addoption(
        "--cases",
        action="append",
        default=None,
        metavar="FILE",
        help="a flow file of your own cases (a recording with `expect` blocks, .gz or not):"
        " each flow that states an outcome is checked as clause CASE (repeatable)"
        " [env CONFORMANCE_CASES, paths separated by the OS path separator]",
    )
    group.addoption(
        "--turn-timeout",
        type=float,
        default=None,
        help="seconds a turn may take before it fails (default 60) [env CONFORMANCE_TURN_TIMEOUT]",
    )


def _option(config: pytest.Config, flag: str) -> str | None:
    value = config.getoption(flag)
    if value is None:
        env = next(e for f, e, _ in _OPTIONS if f == flag)
        value = os.environ.get(env) or None
    return value


@dataclass(frozen=True)
class KitConfig:
    app_url: str | None
    mock_url: str | None
    app_log: Path | None
    profile: Profile
    baseline: Baseline
    report: Path | None
    chromium: str
    artifacts: Path
    turn_timeout_s: float
    trace: str = "dom"
    cases: tuple[CaseFile, ...] = ()
    reference_model: str | None = None


def kit_config(config: pytest.Config) -> KitConfig:
    """The resolved options; UsageError names what is wrong."""
    app_url, mock_url = _option(config, "--app-url"), _option(config, "--mock-url")
    if (app_url is None) != (mock_url is None):
        raise pytest.UsageError(
            "conformance: pass both --app-url and --mock-url, or neither (the kit then"
            " starts the mock and the reference app itself)"
        )
    reference_model = _option(config, "--reference-model")
    if reference_model is not None and app_url is not None:
        raise pytest.UsageError(
            "conformance: --reference-model names the model of the reference app the kit"
            " starts; with --app-url, your app's own setting names its model"
        )
    profile = DEFAULT_PROFILE
    if (path := _option(config, "--profile")) is not None:
        try:
            profile = resolve_profile(path)
        except ProfileError as exc:
            raise pytest.UsageError(f"conformance: {exc}") from exc
    baseline = Baseline()
    if (path := _option(config, "--expected-failures")) is not None:
        try:
            baseline = load_baseline(Path(path))
        except BaselineError as exc:
            raise pytest.UsageError(f"conformance: {exc}") from exc
    timeout = config.getoption("--turn-timeout")
    if timeout is None:
        timeout = float(os.environ.get("CONFORMANCE_TURN_TIMEOUT", "60"))
    log = _option(config, "--app-log")
    report = _option(config, "--conformance-report")
    trace = config.getoption("--conformance-trace") or os.environ.get("CONFORMANCE_TRACE") or "dom"
    if trace not in TRACE_MODES:
        raise pytest.UsageError(
            f"conformance: CONFORMANCE_TRACE={trace!r}; use one of {', '.join(TRACE_MODES)}"
        )
    return KitConfig(
        app_url=app_url,
        mock_url=mock_url,
        app_log=Path(log) if log else None,
        profile=profile,
        baseline=baseline,
        report=Path(report) if report else None,
        chromium=_option(config, "--chromium-path") or DEFAULT_CHROMIUM,
        artifacts=Path(_option(config, "--conformance-artifacts") or "conformance-artifacts"),
        turn_timeout_s=timeout,
        trace=trace,
        cases=kit_cases(config),
        reference_model=reference_model,
    )


_CASES_KEY = pytest.StashKey[tuple[CaseFile, ...]]()


def kit_cases(config: pytest.Config) -> tuple[CaseFile, ...]:
    """The `--cases` files, read once per process; UsageError names a bad one."""
    if _CASES_KEY not in config.stash:
        paths: list[str] = config.getoption("--cases") or []
        if not paths and (env := os.environ.get("CONFORMANCE_CASES")):
            paths = [path for path in env.split(os.pathsep) if path]
        try:
            config.stash[_CASES_KEY] = load_cases(Path(path) for path in paths)
        except CasesError as exc:
            raise pytest.UsageError(f"conformance: {exc}") from exc
    return config.stash[_CASES_KEY]


# --- hooks ------------------------------------------------------------------------------------


@dataclass
class _Results:
    """Per clause, what its tests came to (filled on the controller, xdist included)."""

    outcomes: dict[str, list[str]] = field(default_factory=dict[str, list[str]])


_RESULTS_KEY = pytest.StashKey[_Results]()
_CONFIG_KEY = pytest.StashKey[KitConfig]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "clause(id, flow=None): the contract clause a conformance test checks (and its flow)",
    )
    config.stash[_RESULTS_KEY] = _Results()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A CASE test runs once per case flow, the flow's name its id."""
    marker = metafunc.definition.get_closest_marker("clause")
    if marker is not None and marker.args[0] == "CASE":
        try:
            names = case_flows(kit_cases(metafunc.config))
        except pytest.UsageError:  # raised again once collected, where it ends the run cleanly
            names = []
        metafunc.parametrize("flow", names, ids=names)


def _clause_of(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("clause")
    return None if marker is None else str(marker.args[0])


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect, so the baseline sees every test
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kit_items = [item for item in items if _clause_of(item) is not None]
    if not kit_items:
        return
    kit = kit_config(config)
    if not kit.cases:  # no --cases: the CASE test has no flow to run, and is not collected
        unused = [item for item in kit_items if _clause_of(item) == "CASE"]
        if unused:
            config.hook.pytest_deselected(items=unused)
            items[:] = [item for item in items if item not in unused]
            kit_items = [item for item in kit_items if item not in unused]
    config.stash[_CONFIG_KEY] = kit
    tested = {(_clause_of(item), _flow_of(item)) for item in kit_items}
    for clause, flow in sorted(kit.baseline.entries, key=str):
        if flow is not None and (clause, flow) not in tested:
            flows = sorted(f for c, f in tested if c == clause and f is not None)
            raise pytest.UsageError(
                f"conformance: the baseline entry {clause}:{flow} matches no test"
                f" (the flows {clause} is tested with: {', '.join(flows) or 'none'})"
            )
    for item in kit_items:
        clause = _clause_of(item)
        assert clause is not None
        flow = _flow_of(item)
        item.user_properties.append((CLAUSE_PROPERTY, clause))
        item.user_properties.append((FLOW_PROPERTY, flow or ""))
        if kit.baseline.covers(clause, flow):
            reason = f"baselined in --expected-failures ({clause}{':' + flow if flow else ''})"
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


def _flow_of(item: pytest.Item) -> str | None:
    """The flow a test plays: its `flow` parameter, else the clause marker's `flow=`."""
    callspec = getattr(item, "callspec", None)
    flow = callspec.params.get("flow") if callspec is not None else None
    if flow is None:
        marker = item.get_closest_marker("clause")
        flow = marker.kwargs.get("flow") if marker is not None else None
    return flow if isinstance(flow, str) else None


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    if _CONFIG_KEY not in config.stash:
        return None
    kit = config.stash[_CONFIG_KEY]
    target = kit.app_url or "the reference app (started by the kit)"
    return [f"conformance: target {target}, profile {kit.profile.name} ({kit.profile.source})"]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    properties = dict(report.user_properties)
    clause, verdict = properties.get(CLAUSE_PROPERTY), properties.get(VERDICT_PROPERTY)
    if clause is None or verdict is None:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        _verdicts.append((str(clause), str(verdict)))


_verdicts: list[tuple[str, str]] = []


def _verdict(report: pytest.TestReport) -> str:
    if report.skipped and hasattr(report, "wasxfail"):
        return "expected failure"
    if report.failed and str(report.longrepr).startswith("[XPASS(strict)]"):
        return "stale baseline"
    if report.skipped:
        return "skipped"
    return "passed" if report.passed else "failed"


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput") or _CONFIG_KEY not in config.stash:
        return
    kit = config.stash[_CONFIG_KEY]
    if kit.report is None:
        return
    from conformance.report import write_report

    rows: dict[str, list[str]] = {}
    for clause, verdict in _verdicts:
        rows.setdefault(clause, []).append(verdict)
    write_report(kit.report, rows, target=kit.app_url, profile=kit.profile)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[_CALL_REPORT] = report
    clause = _clause_of(item)
    if clause is None or not (report.when == "call" or report.failed):
        return report
    verdict = _verdict(report)
    report.user_properties.append((VERDICT_PROPERTY, verdict))
    # JUnit XML reads properties from the teardown report, which pytest builds from the item.
    item.user_properties.append((VERDICT_PROPERTY, verdict))
    title = BY_ID[clause].title if clause in BY_ID else "unknown clause"
    if verdict == "stale baseline":
        report.longrepr = (
            f"stale baseline: clause {clause} ({title}) passes now on this flow;"
            " take it out of the --expected-failures file"
        )
    elif verdict == "failed":
        report.longrepr = f"conformance clause {clause} failed: {title}\n\n{report.longreprtext}"
    return report


_CALL_REPORT = pytest.StashKey[pytest.TestReport]()


# --- fixtures ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    app_url: str
    mock_url: str
    log_file: Path | None
    profile: Profile
    upstream: Upstream
    timeout_s: float
    artifacts: Path


@pytest.fixture(scope="session")
def conformance_kit(pytestconfig: pytest.Config) -> KitConfig:
    if _CONFIG_KEY not in pytestconfig.stash:
        pytestconfig.stash[_CONFIG_KEY] = kit_config(pytestconfig)
    return pytestconfig.stash[_CONFIG_KEY]


@pytest.fixture(scope="session")
def conformance_target(
    conformance_kit: KitConfig, tmp_path_factory: pytest.TempPathFactory
) -> Generator[Target]:
    from contextlib import ExitStack

    from conformance.upstream import Upstream

    kit = conformance_kit
    with ExitStack() as stack:
        if kit.app_url is None or kit.mock_url is None:
            from conformance.reference import reference_stack

            data_dir = tmp_path_factory.mktemp("reference")
            started = stack.enter_context(reference_stack(data_dir, kit.reference_model))
            app_url, mock_url, log_file = started.app_url, started.mock_url, started.log_file
        else:
            app_url, mock_url, log_file = kit.app_url, kit.mock_url, kit.app_log
        upstream = Upstream(mock_url, kit.turn_timeout_s)
        stack.callback(upstream.close)
        target = Target(
            app_url=app_url,
            mock_url=mock_url,
            log_file=log_file,
            profile=kit.profile,
            upstream=upstream,
            timeout_s=kit.turn_timeout_s,
            artifacts=kit.artifacts,
        )
        from conformance.preflight import add_cases, check_reachable, register_side_calls

        check_reachable(target)
        register_side_calls(target)
        add_cases(target, kit.cases)
        yield target


@pytest.fixture(scope="session")
def conformance_browser(conformance_kit: KitConfig) -> Generator[Browser]:
    from playwright.sync_api import Error, sync_playwright

    if not Path(conformance_kit.chromium).exists():
        pytest.exit(
            f"conformance preflight: no browser at {conformance_kit.chromium}"
            " (install chromium, or pass --chromium-path)",
            returncode=3,
        )
    playwright: Playwright = sync_playwright().start()
    try:
        try:
            browser = playwright.chromium.launch(
                executable_path=conformance_kit.chromium,
                args=[
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                ],
            )
        except Error as exc:
            pytest.exit(f"conformance preflight: the browser did not start: {exc}", returncode=3)
        yield browser
        browser.close()
    finally:
        playwright.stop()


class BrowserSession:
    """The worker's browser context and its chat page, reused test after test.

    One context per worker keeps the page's files in the browser's cache and one page keeps
    its scripts compiled: a turn then costs a navigation, not a new browser context and a
    cold page load. Each play and each page-driving test still starts from a fresh document
    in the state of a new tab (`ChatPage.open`: the tab's sessionStorage is emptied first),
    its own KEYs and its own recording; after a failure the page is
    dropped and the next one gets a new page, so a page in a bad state never decides another
    test. With tracing on, each play or page-driving test is one trace chunk.
    """

    def __init__(self, context: BrowserContext, target: Target, trace: str) -> None:
        self.context = context
        self.target = target
        self.tracing = trace != "off"
        self._chat: ChatPage | None = None
        self._chunk_open = False
        if self.tracing:
            context.tracing.start(snapshots=True, screenshots=trace == "screenshots")

    def chat(self) -> ChatPage:
        from conformance.page import ChatPage

        if self._chat is None:
            target = self.target
            page = self.context.new_page()
            self._chat = ChatPage(page, target.profile, target.app_url, target.timeout_s * 1000)
        return self._chat

    def begin_chunk(self, title: str) -> bool:
        """Start a trace chunk; False (and nothing started) when tracing is off or a chunk
        is already open."""
        if not self.tracing or self._chunk_open:
            return False
        self.context.tracing.start_chunk(title=title)
        self._chunk_open = True
        return True

    def end_chunk(self, path: Path | None) -> None:
        """End the open trace chunk, written to `path` (dropped when None)."""
        self.context.tracing.stop_chunk(path=str(path) if path is not None else None)
        self._chunk_open = False

    def discard_page(self) -> None:
        if self._chat is not None:
            chat, self._chat = self._chat, None
            chat.page.close()

    def close(self) -> None:
        if self.tracing:
            self.context.tracing.stop()
        self.context.close()


def new_context(browser: Browser, profile: Profile) -> BrowserContext:
    """A browser context for the profile's page: signed in when it names a storage state."""
    storage = profile.storage_state
    return browser.new_context(storage_state=str(storage) if storage else None)


@pytest.fixture(scope="session")
def conformance_session(
    conformance_target: Target, conformance_browser: Browser, conformance_kit: KitConfig
) -> Generator[BrowserSession]:
    context = new_context(conformance_browser, conformance_target.profile)
    session = BrowserSession(context, conformance_target, conformance_kit.trace)
    try:
        yield session
    finally:
        session.close()


@pytest.fixture(scope="session")
def conformance_wired(conformance_target: Target, conformance_session: BrowserSession) -> Target:
    """The wiring check: a first turn must reach this mock's journal (once per worker)."""
    from conformance.preflight import check_wiring

    check_wiring(conformance_target, conformance_session.chat(), f"{RUN_ID}-wiring-{os.getpid()}")
    return conformance_target


_counter = iter(range(1, 1_000_000_000))
_KEYS = pytest.StashKey[list[str]]()


def new_key() -> str:
    """A KEY no other turn of this run (or of another run on the same mock) uses."""
    return f"sg{RUN_ID}p{os.getpid()}n{next(_counter)}"


@pytest.fixture
def conformance_key(request: pytest.FixtureRequest) -> Callable[[], str]:
    """Makes fresh KEYs for a test that drives the page itself (kept for its evidence)."""
    keys = request.node.stash.setdefault(_KEYS, [])

    def make() -> str:
        keys.append(new_key())
        return keys[-1]

    return make


def _failed(request: pytest.FixtureRequest) -> bool:
    """Whether the test failed (set-up failures included: no call report yet)."""
    report = request.node.stash.get(_CALL_REPORT, None)
    return report is None or report.failed


@pytest.fixture(scope="session")
def conformance_plays(
    conformance_wired: Target,
    conformance_session: BrowserSession,
    tmp_path_factory: pytest.TempPathFactory,
) -> Plays:
    """The worker's plays: each flow played once, on first use."""
    from conformance.plays import Plays

    traces = tmp_path_factory.mktemp("plays")
    return Plays(conformance_wired, conformance_session, new_key, traces)


@pytest.fixture
def conformance_play(
    conformance_plays: Plays, conformance_wired: Target, request: pytest.FixtureRequest
) -> Generator[Callable[[str], Play]]:
    """`play(flow)`: the flow's play, shared with every other test judged on it. A play
    that could not be finished fails the test with its error; a failing test leaves the
    evidence of the plays it used."""
    from conformance.evidence import keep_evidence
    from conformance.plays import PlayFailed

    used: list[Play] = []

    def play(flow: str) -> Play:
        played = conformance_plays.get(flow)
        used.append(played)
        if played.error is not None:
            raise PlayFailed(f"flow {flow!r}: the turn could not be played: {played.error}")
        return played

    yield play
    if _failed(request):
        traces = [p.trace for p in used if p.trace is not None]
        keep_evidence(
            request.node.nodeid,
            conformance_wired,
            dom=lambda: "\n".join(p.recorded for p in used),
            keys=[key for p in used for key in p.keys],
            trace=(lambda path: shutil.copyfile(traces[0], path)) if traces else None,
        )


@pytest.fixture
def conformance_chat(
    conformance_wired: Target, conformance_session: BrowserSession, request: pytest.FixtureRequest
) -> Generator[ChatPage]:
    """The chat page, freshly loaded, with a recording that starts with this test: for a
    test that drives the page itself rather than judging a play."""
    from conformance.evidence import keep_evidence

    session = conformance_session
    traced = session.begin_chunk(request.node.nodeid)
    chat = session.chat()
    try:
        chat.open()
        yield chat
    finally:
        if _failed(request):
            keep_evidence(
                request.node.nodeid,
                conformance_wired,
                dom=chat.recorded,
                keys=request.node.stash.get(_KEYS, []),
                trace=session.end_chunk if traced else None,
            )
            session.discard_page()
        elif traced:
            session.end_chunk(None)
