"""mock_llm: an OpenAI-compatible mock LLM server that replays failure shapes on demand.

Put `[[mock:FLOW#KEY]]` in the last user message to pick a flow; see docs/mock_llm.md.
`MockClient` reads the mock's own endpoints (flows, side calls, journal, health) as typed data.

The names below load on first use (PEP 562), so importing one module of the package
(`mock_llm.client`, say, as the conformance kit does) does not load the server or the YAML
parser. `serve_in_thread`, `bind_socket` and `socket_url` are servekit's, exported here too
as part of the embedding API.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from mock_llm.catalog import builtin_flows, load_catalog
    from mock_llm.client import (
        FlowsAdded,
        FlowSummary,
        Health,
        JournalRead,
        JournalRecord,
        MockClient,
        MockClientError,
        SideCallsAdded,
    )
    from mock_llm.flow_file import FlowFileError, load_flow_file, parse_flows
    from mock_llm.flows import Expect, Flow, Step
    from mock_llm.runner import build_settings, serve_mock
    from mock_llm.server import MockSettings, create_app
    from mock_llm.side_calls import SideCallsRefused
    from servekit.in_thread import serve_in_thread
    from servekit.listen import bind_socket, socket_url

__all__ = [
    "Expect",
    "Flow",
    "FlowFileError",
    "FlowSummary",
    "FlowsAdded",
    "Health",
    "JournalRead",
    "JournalRecord",
    "MockClient",
    "MockClientError",
    "MockSettings",
    "SideCallsAdded",
    "SideCallsRefused",
    "Step",
    "bind_socket",
    "build_settings",
    "builtin_flows",
    "create_app",
    "load_catalog",
    "load_flow_file",
    "parse_flows",
    "serve_in_thread",
    "serve_mock",
    "socket_url",
]

_HOMES = {
    "mock_llm.catalog": ("builtin_flows", "load_catalog"),
    "mock_llm.client": (
        "FlowSummary",
        "FlowsAdded",
        "Health",
        "JournalRead",
        "JournalRecord",
        "MockClient",
        "MockClientError",
        "SideCallsAdded",
    ),
    "mock_llm.flow_file": ("FlowFileError", "load_flow_file", "parse_flows"),
    "mock_llm.flows": ("Expect", "Flow", "Step"),
    "mock_llm.runner": ("build_settings", "serve_mock"),
    "mock_llm.server": ("MockSettings", "create_app"),
    "mock_llm.side_calls": ("SideCallsRefused",),
    "servekit.in_thread": ("serve_in_thread",),
    "servekit.listen": ("bind_socket", "socket_url"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> object:
    """A name of `__all__`, imported from its module on first use."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is an ordinary one
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
