"""mock_llm: an OpenAI-compatible mock LLM server that replays failure shapes on demand.

Put `[[mock:FLOW#KEY]]` in the last user message to pick a flow; see docs/mock_llm.md.
`MockClient` reads the mock's own endpoints (flows, side calls, journal, health) as typed data.
"""

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
