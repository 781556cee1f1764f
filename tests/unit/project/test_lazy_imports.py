"""What importing a part loads: the guard proxy and the app load none of the mock, and one
module of the mock loads neither its server nor the YAML parser (issue 26: the package's
`__init__` imported both, so the guard proxy loaded the whole mock); the mock and the kit
load nothing of the guardrail but its JSON-shape helpers (issue 40: the oracle stays
independent of the guard's filter and family table).

Each check runs in a fresh interpreter, since this one has imported everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ...support.deadlines import DEADLINE_S


def loaded_after(statement: str, packages: tuple[str, ...] = ("mock_llm", "yaml")) -> list[str]:
    """The modules of `packages` in sys.modules after `statement`, in a fresh process."""
    script = (
        f"import json, sys\n{statement}\n"
        "print(json.dumps(sorted(m for m in sys.modules"
        f" if m.split('.')[0] in {packages!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    "statement", ["import guard.http.server", "import guard.cli", "import scaffold_guard.app.main"]
)
def test_the_guard_proxy_and_the_app_load_nothing_of_the_mock(statement: str):
    assert loaded_after(statement) == []


def test_the_mock_client_loads_neither_the_server_nor_the_flow_file_parser():
    loaded = loaded_after("import mock_llm.client")
    assert "mock_llm.client" in loaded
    assert not {
        "mock_llm.server.app",
        "mock_llm.flows.flow_file",
        "mock_llm.server.runner",
        "yaml",
    } & set(loaded)


def test_a_name_of_the_package_loads_its_module_on_first_use():
    loaded = loaded_after(
        "import mock_llm\nassert 'mock_llm.server.app' not in sys.modules\nmock_llm.create_app"
    )
    assert "mock_llm.server.app" in loaded


@pytest.mark.parametrize(
    "statement",
    ["import mock_llm.server.app, mock_llm.cli", "import conformance.plugin, conformance.init"],
)
def test_the_mock_and_the_kit_load_nothing_of_the_guardrail_but_its_json_shapes(statement: str):
    assert loaded_after(statement, ("guardrail",)) == ["guardrail", "guardrail.json_shapes"]


def test_a_name_of_the_guardrail_loads_its_module_on_first_use():
    loaded = loaded_after(
        "import guardrail\nassert 'guardrail.scaffolding' not in sys.modules\n"
        "guardrail.ScaffoldingFilter",
        ("guardrail",),
    )
    assert "guardrail.scaffolding" in loaded


def test_the_transports_load_no_server_framework():
    loaded = loaded_after(
        "import guard.transport", ("starlette", "aiohttp", "fastapi", "uvicorn", "mock_llm", "yaml")
    )
    assert loaded == []
