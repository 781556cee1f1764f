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
    from mock_llm.flows.catalog import builtin_flows, load_catalog
    from mock_llm.flows.flow_file import FlowFileError, load_flow_file, parse_flows
    from mock_llm.flows.model import Expect, Flow, Step
    from mock_llm.play.side_calls import SideCallsRefused
    from mock_llm.server.app import create_app
    from mock_llm.server.runner import build_settings, serve_mock
    from mock_llm.server.state import MockSettings
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
    "mock_llm.flows.catalog": ("builtin_flows", "load_catalog"),
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
    "mock_llm.flows.flow_file": ("FlowFileError", "load_flow_file", "parse_flows"),
    "mock_llm.flows.model": ("Expect", "Flow", "Step"),
    "mock_llm.server.runner": ("build_settings", "serve_mock"),
    "mock_llm.server.app": ("create_app",),
    "mock_llm.server.state": ("MockSettings",),
    "mock_llm.play.side_calls": ("SideCallsRefused",),
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
