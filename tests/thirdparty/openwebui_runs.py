"""The conformance kit against the real Open WebUI, by each route a person can wire it.

One route is one Open WebUI (its own data folder), one mock, and the whole kit run against
its page with the built-in `openwebui` profile and the recorded LFM2 leaks as cases:

- `direct`: Open WebUI's default route, its Ollama connection, straight to the mock. Open
  WebUI shows the raw markup: the kit must fail the leak clauses and pass the clean ones.
- `guard-openai` and `guard-ollama`: the guard proxy (in-process, on the same mock) between
  Open WebUI and the mock, through its OpenAI connection and through its Ollama
  connection: every clause the page can be checked on passes.
- `filter`: straight to the mock over the Ollama connection, with our Filter Function
  (scaffold_guard/integrations/openwebui/scaffold_guard_filter.py) installed through Open WebUI's
  API and made global: every clause a filter can honour passes; the ones it cannot (a filter cannot
  ask the model again: no recovery request, and an all-markup reply shows the
  malformed-reply copy as the answer, not an error state) are its strict baseline,
  scaffold_guard/integrations/openwebui/expected-failures.txt.

`run_route` is shared by the third-party test (tests/thirdparty/test_openwebui_kit.py)
and the report command (scripts/openwebui_report.py).
"""

from __future__ import annotations

from pathlib import Path

from mock_llm import serve_mock

from ..conformance_selftest.kit_runs import CASES, ROOT, KitRun, run_kit
from ..support.servers import serve_guard
from .openwebui import Connection, install_function, serve_open_webui

ROUTES = ("direct", "guard-openai", "guard-ollama", "filter")
ROUTE_TITLES = {
    "direct": "Open WebUI straight from the model server (its Ollama connection)",
    "guard-openai": "Open WebUI behind the guard proxy, through its OpenAI connection",
    "guard-ollama": "Open WebUI behind the guard proxy, through its Ollama connection",
    "filter": "Open WebUI with the scaffold-guard Filter Function (Ollama connection)",
}
LEAK_CLAUSES = {"G2", "G3", "G4", "G5", "G6", "G8", "G13", "NEVER", "CASE"}
"""What a page that shows the model's markup fails (the recorded leaks, CASE, and DeepSeek's
DSML, G13, too)."""
CLEAN_CLAUSES = {"G1", "G7", "G9", "G11", "G15"}
"""What Open WebUI gets right on its own: clean text, look-alikes (its own and other model
families'), raw thinking, Stop."""
NOT_OPEN_WEBUIS = {"G10", "G12", "G14"}
"""No per-turn log the kit can read, and no document tools of ours: these skip."""
FILTER_FILE = ROOT / "scaffold_guard" / "integrations" / "openwebui" / "scaffold_guard_filter.py"
FILTER_BASELINE = ROOT / "scaffold_guard" / "integrations" / "openwebui" / "expected-failures.txt"


def run_route(route: str, out: Path) -> KitRun:
    """The whole kit against Open WebUI wired by `route` (see the module docstring)."""
    with serve_mock() as mock_url, serve_guard(mock_url) as guard_url:
        connection = {
            "direct": Connection("ollama", mock_url),
            "guard-openai": Connection("openai", f"{guard_url}/v1"),
            "guard-ollama": Connection("ollama", guard_url),
            "filter": Connection("ollama", mock_url),
        }[route]
        with serve_open_webui(connection, out / "open-webui-data") as app_url:
            extra = ["--cases", str(CASES)]
            if route == "filter":
                source = FILTER_FILE.read_text(encoding="utf-8")
                install_function(app_url, "scaffold_guard", source, "Scaffold guard")
                extra += ["--expected-failures", str(FILTER_BASELINE)]
            return run_kit(app_url, mock_url, None, out, "--profile", "openwebui", *extra)
