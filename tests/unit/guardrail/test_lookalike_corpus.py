"""Look-alikes stay text (G7) under every profile: for each model family, prose that names,
quotes or nearly writes its tool-call markup, which no registry may strip, whatever the
model's name says and however the text is chunked.

The texts are what an answer about these formats says: a marker in prose, in inline code or
a fenced example, a marker without the body its model writes after it, another spelling
(case, spaces, a missing bracket), a residue word inside a sentence. Special tokens written
out whole are not look-alikes (the contract strips them everywhere), so none is here.
"""

from __future__ import annotations

import pytest

from guardrail.model_profiles import FAMILIES, registry_for
from guardrail.patterns import Registry
from guardrail.registries import OPT_IN, PROFILES, registry_with

from ...support.cases import check_each
from ..helpers.scaffolding import chunked, cut_at, run

CORPUS: dict[str, tuple[str, ...]] = {
    "LFM2": (
        "LFM2 marks a call with tool_call_start and tool_call_end tokens.",
        "A lone <|tool_call_end|> is left as it is, and so is <|some_other_token|>.",
        "The token spelled < |tool_call_start| > with spaces is not the token.",
        "Write a < b and b > c; <| and |> alone are text, and so is <<<<.",
        "It ends with <|tool_call_st",
    ),
    "Qwen": (
        "Qwen wraps each call in <tool_call> tags and closes it with </tool_call>.",
        "Put the JSON between <tool_call> and </tool_call>, one call per block.",
        'The block looks like `<tool_call>{"name": "read"}</tool_call>` in the template.',
        'An example:\n```xml\n<tool_call>\n{"name": "read", "arguments": {}}\n</tool_call>\n```\n'
        "That is all.",
        "The <tool_call> element is the Hermes convention.",
        "Set --tool-call-parser hermes; <TOOL_CALL> in capitals is something else.",
    ),
    "Qwen3-Coder": (
        "Qwen3-Coder writes <function=NAME> blocks with <parameter=KEY> children.",
        "The opener is `<function=read_file>` and the closer is `</function>`.",
        "In JavaScript, <function=handler> is not a tag and neither is a => b.",
        "A </tool_call> alone closes nothing.",
        "Its parser splits on <function= and on </function>.",
    ),
    "Gemma": (
        "Recall:the{first} rule; syscall:read{fd} is a kernel thing.",
        "To call: {json} is how a human might write it.",
        "Gemma 4 writes `call:get_weather{location:Paris}` between its tool tokens.",
        "The word call: then a name and a brace, as in call: f {x}.",
        "FunctionGemma's format is described as start_function_call ... end_function_call.",
    ),
    "DeepSeek": (
        "DeepSeek writes tool_calls_begin and tool_calls_end between fullwidth bars.",
        "The DSML block is named function_calls; |DSML| alone is not an opener.",
        "A pipe table: | DSML | function_calls | invoke |",
        'Anthropic-style calls look like `<invoke name="read">` with parameters inside.',
        'Stripped of its bars, DSML becomes <function_calls> around <invoke name="...">.',
        "Its sections are <calls> or < calls> once the bars are lost.",
        '```xml\n<invoke name="read">\n<parameter name="path">/a</parameter>\n</invoke>\n```',
    ),
    "gpt-oss": (
        "The analysis channel holds reasoning; assistantfinal marks the answer.",
        "analysis of the logs shows nothing unusual.",
        "Our analysisWe keep in the notes.assistantfinal is a word too.",
        "Analysis: the backup ran at 02:00.",
        "The channel names are analysis, commentary and final.",
        "to=functions.get_weather is how the header names its recipient.",
        " to=assistant, then the answer.",
        "Set the commentary to=nothing in the config.",
        "A header reads commentary to=functions.read json, then the arguments.",
        "Its later messages open with assistantanalysis or assistantcommentary.",
        '```\nassistantcommentary to=functions.read json{"path": "/a"}\n```',
    ),
    "Mistral": (
        "Mistral models start a call with [TOOL_CALLS] and then a JSON list.",
        "The [TOOL_CALLS] token, then the arguments.",
        "[TOOL_CALLS] is documented in the tokenizer.",
        "[TOOL_CALLS] not json at all",  # vllm's pre-v11 fallback test: no call follows
        'Inline: `[TOOL_CALLS][{"name": "read"}]` is the raw form.',
    ),
    "Llama": (
        "Llama 3 uses python_tag for code calls and eom_id to end them.",
        "The ipython role carries the tool result.",
        # JSON answers a user asked for: only a whole reply of call-shaped objects is a call
        '{"name": "Alice", "age": 30, "parameters": {"height": 170}}',
        '[{"name": "get_weather", "parameters": {"city": "Paris"}}]',
        'The call looks like {"name": "get_weather", "parameters": {"city": "Paris"}}.',
        '```json\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n```',
        '{"name": "get weather", "parameters": {}}',
        # lists a user asked for: only a whole reply of calls with literal keywords is a call
        "[1] Backups run nightly.",
        "[Backups](https://example.com/backups) run nightly at 02:00.",
        "[get_weather(city='Paris')] is the call it would make.",
        "[sorted(xs), len(xs)]",
        "```python\n[get_weather(city='Paris')]\n```",
        '{"name": "f", "parameters": "none"}',
        '; {"name": "f", "parameters": {}}',
    ),
    "Kimi": ("Kimi's tool_calls_section_begin and tool_call_begin tokens wrap a call.",),
    "GLM": (
        "GLM puts each argument in <arg_key> and <arg_value> tags.",
        "The <arg_key>path</arg_key> pair names the key; the value follows.",
        "Use `<arg_key>k</arg_key><arg_value>v</arg_value>` per argument.",
        "GLM's <tool_call> is followed by the function's name.",
    ),
    "MiniMax": (
        "MiniMax-M2 wraps calls in <minimax:tool_call> blocks with <invoke> inside.",
        "The <tool_calls> element lists calls; so does [TOOL_CALL] in some builds.",
        'An example: `<minimax:tool_call><invoke name="read">` and so on.',
        "[TOOL_CALL] then prose, [/TOOL_CALL].",
    ),
    "Seed-OSS": (
        "Seed-OSS wraps a call in <seed:tool_call> and </seed:tool_call>.",
        "The <seed:think> block is reasoning; <seed:tool_call> is the call.",
    ),
    "Nemotron": (
        "Nemotron writes <TOOLCALL> then a JSON list, and </TOOLCALL>.",
        "The <TOOLCALL> tag, in capitals.",
    ),
    "Granite": ("Granite 4 wraps calls in <tool_call> tags, like Hermes.",),
    "Phi": ("Phi-4-mini uses functools[...] to list tools.",),
    "StepFun": ("Step 3.5 writes <function=NAME> blocks inside <tool_call> tags.",),
    "Ling": ("Ling writes <tool_call>NAME then <arg_key> and <arg_value> pairs.",),
    "Reka": ("Reka Edge puts its JSON between <tool_call> and </tool_call>.",),
    "MiMo": ("MiMo-VL calls tools with <tool_call> blocks, as Hermes does.",),
    "Apriel": ("Apriel lists its calls in <tool_calls> as a JSON array.",),
}
"""Look-alike prose by the family whose markup it names."""

ECHO_LOOKALIKES = (
    "[Calling tool: read(path='/a')] is how the transcript showed the call.",
    "A transcript line reads [Calling tool: grep(pattern='x')].",
)
"""Text the opt-in `echo` profile strips (it is prose-like), and only that profile."""

EVERY_CHUNKING = (1, 3, 7)


def registries() -> dict[str, Registry]:
    """Every registry a setting can give: each profile alone (on LFM2's), `all`, and
    `auto` for a name of every family."""
    found = {f"profile {name}": registry_with(name) for name in PROFILES if name not in OPT_IN}
    found["all"] = registry_with(*(name for name in PROFILES if name not in OPT_IN))
    for family in FAMILIES:
        for key in family.keys:
            found[f"auto {key}"] = registry_for(f"{key}-8b")
    return found


REGISTRIES = registries()


def shown_under(text: str, registry: Registry) -> set[str]:
    """What `text` shows whole, in 1-, 3- and 7-character chunks, and cut at every offset."""
    outputs = {run(chunked(text, size), registry)[0] for size in EVERY_CHUNKING}
    outputs.add(run([text], registry)[0])
    return outputs | {run(cut_at(text, i), registry)[0] for i in range(len(text) + 1)}


def test_every_family_has_look_alikes():
    assert {f.name for f in FAMILIES} - {"Hermes", "Jamba", "InternLM", "Command"} <= set(CORPUS)


def distinct_registries() -> dict[str, Registry]:
    """REGISTRIES with each distinct registry once, named by every setting that gives it
    (many model names give the same `auto` registry: checking it once checks them all)."""
    names: dict[Registry, list[str]] = {}
    for where, registry in sorted(REGISTRIES.items()):
        names.setdefault(registry, []).append(where)
    return {" = ".join(settings): registry for registry, settings in names.items()}


@pytest.mark.sweep
def test_look_alikes_are_shown_unchanged():
    """Every family's look-alikes under every registry a setting can give; a failure names
    the registry's settings, the family and the text."""

    def shown_unchanged(case: tuple[str, Registry]) -> None:
        text, registry = case
        assert shown_under(text, registry) == {text}

    cases = [
        (f"{where} / {family}: {text!r}", (text, registry))
        for where, registry in distinct_registries().items()
        for family in sorted(CORPUS)
        for text in CORPUS[family]
    ]
    assert check_each(cases, shown_unchanged) == len(cases) > 0


@pytest.mark.parametrize("text", ECHO_LOOKALIKES)
def test_an_echoed_call_is_text_unless_echo_is_named(text: str):
    for registry in REGISTRIES.values():
        assert shown_under(text, registry) == {text}
    assert run([text], registry_with("echo"))[0] != text
