"""`uv run python scripts/record_real_leak.py`: record a real model's leak as a kit case.

Starts llama.cpp's llama-server with SmolLM2-135M-Instruct (the cached build:
`uv run python -m tests.thirdparty.venvs llama-server` first), `python -m mock_llm record`
in front of it, and the guard proxy in front of the recorder; sends the conversation of
tests/thirdparty/real_leak.py through the guard, streamed, its last message carrying the
trigger `[[mock:FLOW#real]]` so the turn's requests (the round and the guard's one recovery)
land in one recorded flow; and writes that flow, as the server really streamed it (its
chunk boundaries and gaps), with the `expect` block of what the guard's client was shown,
to tests/fixtures/cases/smollm2-llama-server.yaml (`--out FILE`). The gate's kit run checks
the reference app against it (`--cases`), as it checks the LFM2 incident.

Greedy decoding from a fixed seed makes the same text every run on a machine; the gaps
between chunks are the run's own, so a new recording differs in them only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from guardrail.json_shapes import as_object, objects, string_field  # noqa: E402
from mock_llm import load_flow_file  # noqa: E402
from mock_llm.flows.flow_writer import dump_flows  # noqa: E402
from mock_llm.flows.model import Expect  # noqa: E402
from mock_llm.record.recorder import RecorderSettings, Upstream, serve_recorder  # noqa: E402
from tests.support.servers import serve_guard  # noqa: E402
from tests.thirdparty.llama_server import serve_llama_server  # noqa: E402
from tests.thirdparty.real_leak import CANARY, FLOW, LEAK_MESSAGES  # noqa: E402

KEY = "real"
"""The trigger's key: a keyed turn's requests (the recovery too) land in one flow."""
OUT = ROOT / "tests" / "fixtures" / "cases" / "smollm2-llama-server.yaml"
COMMENT = (
    "A real leak: SmolLM2-135M-Instruct through llama.cpp's llama-server (greedy, seed 42),\n"
    "no tools offered, wrote LFM2's call markup into its answer a token per chunk; the guard\n"
    "proxy stripped it and asked once more. Recorded by scripts/record_real_leak.py; the\n"
    "expect block is what the guard's client was shown. Kit clause CASE (--cases)."
)
MARKUP = re.compile(r"<\|tool_call_start\|>.*?(?:<\|tool_call_end\|>|\Z)", re.DOTALL)
"""LFM2's call markup, spelled here for the count (the guard's log gives the same)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Record a real model's leak as a kit case.")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sg-record-") as scratch:
        work = Path(scratch)
        recording = work / "recording.yaml"
        with serve_llama_server(work) as llama:
            settings = RecorderSettings(upstream=Upstream.parse(f"{llama}/v1"), out=recording)
            with serve_recorder(settings) as (recorder_url, recorder):
                with serve_guard(recorder_url) as guard:
                    shown = ask(guard)
                if not recorder.wait_for(saved=2, timeout_s=60):
                    print("record_real_leak: the recorder saved no two answers", file=sys.stderr)
                    return 1
        flow = load_flow_file(recording)[FLOW]
    texts = [step.content for step in flow.steps]
    if len(texts) != 2 or not MARKUP.search(texts[0]):
        print(f"record_real_leak: no leak then one recovery, but {texts!r}", file=sys.stderr)
        return 1
    stripped = sum(len(m.group()) for text in texts for m in MARKUP.finditer(text))
    error = "malformed" if not shown.strip() else None
    expect = Expect(shown, True, stripped, error, 2)
    case = replace(flow, description="SmolLM2 via llama-server wrote LFM2's call markup, no tools"
                   " offered", canary=CANARY, expect=expect)  # fmt: skip
    args.out.write_text(dump_flows([case], COMMENT), encoding="utf-8")
    print(f"record_real_leak: wrote {args.out} (round 1: {texts[0]!r}; shown: {shown!r})")
    return 0


def ask(guard: str) -> str:
    """The conversation through the guard, streamed, with the trigger; the text shown."""
    messages = [dict(m) for m in LEAK_MESSAGES]
    messages[-1]["content"] += f" [[mock:{FLOW}#{KEY}]]"
    body = {"model": "smollm2", "messages": messages, "stream": True, "temperature": 0,
            "seed": 42, "max_tokens": 64}  # fmt: skip
    shown: list[str] = []
    with httpx.stream("POST", f"{guard}/v1/chat/completions", json=body, timeout=300) as answer:
        for line in answer.iter_lines():
            if line.startswith("data: {"):
                event = as_object(json.loads(line[6:])) or {}
                for choice in objects(event.get("choices")):
                    shown.append(string_field(choice.get("delta"), "content") or "")
    return "".join(shown)


if __name__ == "__main__":
    raise SystemExit(main())
