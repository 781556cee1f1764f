"""mock_llm: an OpenAI-compatible mock LLM server that replays failure shapes on demand.

Put `[[mock:FLOW#KEY]]` in the last user message to pick a flow; see docs/mock_llm.md.
"""

from mock_llm.catalog import builtin_flows, load_catalog
from mock_llm.flow_file import FlowFileError, load_flow_file, parse_flows
from mock_llm.flows import Flow, Step
from mock_llm.runner import bind_socket, build_settings, serve_in_thread, serve_mock, socket_url
from mock_llm.server import MockSettings, create_app

__all__ = [
    "Flow",
    "FlowFileError",
    "MockSettings",
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
