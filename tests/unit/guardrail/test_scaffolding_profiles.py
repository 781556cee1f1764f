"""Real leaked markup, each with its public source, for every registry entry and profile.

Each fixture is replayed whole, in 1- and 7-character chunks, and cut in two at every
offset; the output must be the same every time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from guardrail.model_profiles import registry_for as auto_registry
from guardrail.patterns import Pattern, Registry
from guardrail.registries import DEFAULT_REGISTRY, DSML_BARS, PROFILES, registry_with
from guardrail.scaffolding import ScaffoldingFilter

from ..helpers.scaffolding import chunked, cut_at, reasoned, run

EVERY_BAR = tuple(DSML_BARS.items())
"""DSML's bar and its mangled spellings, each with its patterns' name suffix."""
MANGLED_BARS = EVERY_BAR[1:]

# (pattern name, profile or None for the default registry, leaked text, expected output)
INCIDENTS: list[tuple[str, str | None, str, str]] = [
    (  # lmstudio-bug-tracker #1979
        "lfm2-tool-call", None,
        'Sure. <|tool_call_start|>[list_directory(path="desktop")]<|tool_call_end|>', "Sure. ",
    ),
    (  # contract clause G6
        "tool-calls-token", None, "The backup job<|tool_calls|> runs nightly.",
        "The backup job runs nightly.",
    ),
    ("tool-call-token", None, "Done.<|tool_call|> Check the log.", "Done. Check the log."),
    (  # sglang PR #19925 / vllm-mlx PR #797 (GLM)
        "hermes-tool-call", "hermes",
        "Running it.<tool_call>Bash<arg_key>command</arg_key><arg_value>ls -la</arg_value>"
        "</tool_call>",
        "Running it.",
    ),
    (  # ollama model/parsers/glm46_test.go: GLM's name on the line after the tag
        "hermes-tool-call", "hermes",
        "<tool_call>\nlookup_ticket\n<arg_key>id</arg_key>\n<arg_value>T-1</arg_value>\n"
        "</tool_call>Done.",
        "Done.",
    ),
    *(  # ml-explore/mlx-lm PR #792: GLM-4.7's malformed `name {json}` and `name key=value`
        ("hermes-tool-call", "hermes", f"Ok.<tool_call>{body}</tool_call> Done.", "Ok. Done.")
        for body in ('get_weather {"city": "Xian"}', "bash command=ls -la /srv")
    ),
    (  # sglang #30480: unterminated
        "hermes-tool-call", "hermes",
        'I will check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "San Fr',
        "I will check.\n",
    ),
    *(  # llama.cpp tests/test-chat.cpp: the other tags its Hermes 2 Pro parser reads a call from
        (
            f"hermes-{tag.replace('_', '-')}-wrapper", "hermes",
            f'Checking.<{tag}>\n  {{"name": "special_function", "arguments": {{"arg1": 1}}}}\n'
            f"</{tag}> Done.",
            "Checking. Done.",
        )
        for tag in ("tool", "tools", "response", "json", "JSON", "xml", "function_call")
    ),
    (  # llama.cpp tests/test-chat.cpp (Hermes 2 Pro): the key on its own line, deeply indented
        "hermes-xml-wrapper", "hermes",
        '<xml>\n  {\n    "name": "special_function", "arguments": {"arg1": 1}\n  }\n</xml>',
        "",
    ),
    (  # llama.cpp tests/test-chat.cpp (Hermes 2 Pro): arguments first, as Hermes 2 Pro writes
        "hermes-tool-wrapper", "hermes",
        '<tool>{"arguments": {"arg1": 1}, "name": "special_function"}</tool>',
        "",
    ),
    (  # llama.cpp tests/test-chat.cpp (Hermes 2 Pro, Functionary v3.1): a JSON body
        "function-json-tag", "function-tag",
        '<function=special_function>{"arg1": 1}</function>\n'
        "<function=python>{\"code\":\"print('hello')\"}</function>",
        "\n",
    ),
    (  # llama.cpp tests/test-chat.cpp (Hermes 2 Pro)
        "function-name-tag", "function-tag",
        'Sure.<function name="special_function">\n{"arg1": "a </function> b"}\n</function> Done.',
        "Sure. Done.",
    ),
    (  # llama.cpp tests/test-chat.cpp (Hermes 2 Pro): a Qwen3-Coder function with a JSON body
        "qwen3-coder-function", "qwen3-coder",
        'Reading.<function=read>{"path": "/homelab/a.md"}</function>\n</tool_call> ok',
        "Reading. ok",
    ),
    (  # formats.md catalog: Qwen3-Coder bare <function=...>
        "qwen3-coder-function", "qwen3-coder",
        "Reading.<function=read><parameter=path>/homelab/a.md</parameter></function> ok",
        "Reading. ok",
    ),
    (  # mlx-lm PR #1448: no end marker; the call ends with its JSON, the prose after it shows
        "mistral-tool-calls", "mistral",
        'Sure.[TOOL_CALLS]get_weather[ARGS]{"city": "Tokyo"}\n\nLet me search for that.',
        "Sure.\n\nLet me search for that.",
    ),
    (  # google/adk-python PR #5654
        "deepseek-tool-calls", "deepseek",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>analysis_input\n"
        '```json\n{"work_dir_name":"..."}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        "",
    ),
    (
        "deepseek-tool-call", "deepseek",
        'x<｜tool▁call▁begin｜>read<｜tool▁sep｜>{"path": "/a"}<｜tool▁call▁end｜>y', "xy",
    ),
    (
        "deepseek-dsml-function-calls", "deepseek",
        'a<｜DSML｜function_calls><｜DSML｜invoke name="f"><｜DSML｜parameter name="k" '
        'string="true">v</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>b',
        "ab",
    ),
    (
        "deepseek-dsml-tool-calls", "deepseek",
        'a<｜DSML｜tool_calls><｜DSML｜invoke name="f"></｜DSML｜invoke></｜DSML｜tool_calls>b',
        "ab",
    ),
    (  # TensorRT-LLM #9256
        "harmony-messages", "harmony",
        '<|channel|>commentary<|message|>{\n  "path": "/", "depth": 1}<|end|>', "",
    ),
    (  # odysseus #4522 / PR #4523
        "harmony-messages", "harmony",
        "Searching. <|channel|>commentary to=functions.web_search<|message|>{...}<|call|>",
        "Searching. ",
    ),
    (  # exo PR #1588: EOS-terminated, so usually unterminated in text
        "llama3-python-tag", "llama",
        'Let me look.<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
        "Let me look.",
    ),
    (
        "llama3-python-tag", "llama",
        'a<|python_tag|>brave_search.call(query="x")<|eom_id|>b', "ab",
    ),
    (
        "llama4-python", "llama",
        "a<|python_start|>[f(a=1), g(b='x')]<|python_end|>b", "ab",
    ),
    (  # ggml-org/llama.cpp PR #17376: the singular section token Kimi K2 writes too
        "kimi-tool-call-section", "kimi",
        "I'll check. <|tool_call_section_begin|><|tool_call_begin|>functions.get_weather:0"
        ' <|tool_call_argument_begin|>{"city": "Beijing"}<|tool_call_end|>'
        "<|tool_calls_section_end|>",
        "I'll check. ",
    ),
    (  # MoonshotAI/Kimi-K2 #26
        "kimi-tool-calls-section", "kimi",
        '<|tool_calls_section_begin|><|tool_call_begin|>functions.TodoWrite:1'
        '<|tool_call_argument_begin|>"{\\"todos\\": []}"<|tool_call_end|>'
        "<|tool_calls_section_end|>",
        "",
    ),
    (  # vllm PR #31207
        "kimi-tool-call", "kimi",
        'ok <|tool_call_begin|> functions.get_weather:0 {"city": "Tokyo"} <|tool_call_end|>',
        "ok ",
    ),
    (  # earendil-works/pi #368
        "minimax-m2-tool-call", "minimax",
        '<minimax:tool_call>\n<invoke name="bash">mb --help</invoke>\n'
        '<invoke name="bash">cm --help</invoke>\n</minimax:tool_call>',
        "",
    ),
    (
        "minimax-m1-tool-calls", "minimax-m1",
        'a<tool_calls>\n{"name": "f", "arguments": {}}\n</tool_calls>b', "ab",
    ),
    (
        "internlm-action", "internlm",
        'a<|action_start|><|plugin|>{"name": "f", "parameters": {}}<|action_end|>b', "ab",
    ),
    (
        "cohere-action", "cohere",
        'a<|START_ACTION|>[{"tool_call_id":"0","tool_name":"read","parameters":{}}]'
        "<|END_ACTION|>b",
        "ab",
    ),
    (
        "gemma4-tool-call", "gemma",
        'a<|tool_call>call:f{k:<|"|>v<|"|>}<tool_call|>b', "ab",
    ),
    (
        "functiongemma-call", "gemma-plain",
        "a<start_function_call>call:f{k:<escape>v<escape>}<end_function_call>b", "ab",
    ),
    (  # ollama/ollama #16686: no opening <tool_call>, the closing one still written
        "qwen3-coder-function", "qwen3-coder",
        "Let me read it.\n<function=Read>\n<parameter=file_path>/homelab/notes.md</parameter>\n"
        "</function>\n</tool_call>",
        "Let me read it.\n",
    ),
    (  # sgl-project/sglang #35736: DeepSeek V4 with tool_choice "none"
        "deepseek-dsml-tool-calls", "deepseek",
        '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="Bash">\n<｜DSML｜parameter name="command" '
        'string="true">pwd</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>Done.',
        "Done.",
    ),
    (  # lsdefine/GenericAgent #804: U+2016 bars, split as `hello<‖DS` + `ML‖tool_calls>world`
        "deepseek-dsml-tool-calls-u2016", "deepseek",
        'hello<‖DSML‖tool_calls><‖DSML‖invoke name="f"></‖DSML‖invoke></‖DSML‖tool_calls>world',
        "helloworld",
    ),
    (  # lsdefine/GenericAgent #804: doubled bars
        "deepseek-dsml-tool-calls-doubled", "deepseek",
        'a<｜｜DSML｜｜tool_calls><｜｜DSML｜｜parameter name="k">v</｜｜DSML｜｜parameter>'
        "</｜｜DSML｜｜tool_calls>b",
        "ab",
    ),
    (  # AgentFlocks/flocks PR #687: doubled ASCII bars
        "deepseek-dsml-tool-calls-ascii-doubled", "deepseek",
        'a<||DSML||tool_calls><||DSML||invoke name="read"></||DSML||invoke></||DSML||tool_calls>b',
        "ab",
    ),
    (  # cline/cline #13348: ASCII bars, closed with fullwidth ones
        "deepseek-dsml-tool-calls-ascii", "deepseek",
        'a<|DSML|tool_calls><|DSML|invoke name="read"></|DSML|invoke></｜DSML｜tool_calls>b',
        "ab",
    ),
    (  # AgentFlocks/flocks PR #687: ASCII bars with a space each side
        "deepseek-dsml-tool-calls-ascii-padded", "deepseek",
        'a< | DSML | tool_calls>< | DSML | invoke name="read"></ | DSML | invoke>'
        "</ | DSML | tool_calls>b",
        "ab",
    ),
    (  # CJackHwang/ds2api #389: the opener ended by `|`, CDATA values
        "deepseek-dsml-tool-calls-ascii", "deepseek",
        '<|DSML|tool_calls|\n   <|DSML|invoke name="terminal">\n     <|DSML|parameter'
        ' name="command"><![CDATA[find "/home" -type d]]></|DSML|parameter>\n'
        "   </|DSML|invoke>\n </|DSML|tool_calls>\nDone.",
        "\nDone.",
    ),
    (  # earendil-works/pi #3712: the turn ends right after an opener with no `>`
        "deepseek-dsml-tool-calls", "deepseek",
        "Let me check the notes.\n<｜DSML｜tool_calls",
        "Let me check the notes.\n",
    ),
    *(  # kittors/deepseek-web-api #11, diegosouzapw/OmniRoute PR #13345: a `calls` section
        (
            f"deepseek-dsml-calls{suffix}", "deepseek",
            f'a<{bar}DSML{bar}calls>\n<{bar}DSML{bar}invoke name="pwsh">\n<{bar}DSML{bar}'
            'parameter name="command" string="true">Get-ChildItem -Force</'
            f"{bar}DSML{bar}parameter>\n</{bar}DSML{bar}invoke>\n</{bar}DSML{bar}calls>b",
            "ab",
        )
        for bar, suffix in EVERY_BAR
    ),
    *(  # AgentFlocks/flocks PR #687: a `tool_use` section
        (
            f"deepseek-dsml-tool-use{suffix}", "deepseek",
            f'a<{bar}DSML{bar}tool_use><{bar}DSML{bar}invoke name="read">'
            f"</{bar}DSML{bar}invoke></{bar}DSML{bar}tool_use>b",
            "ab",
        )
        for bar, suffix in EVERY_BAR
    ),
    (  # anomalyco/opencode #34676: DeepSeek V4 Flash, official API, DSML markers stripped
        "deepseek-bare-invoke", "deepseek-xml",
        'I will read it.\n<invoke name="read">\n<parameter name="filePath" string="true">'
        "/home/u/src/api.ts</parameter>\n</invoke>",
        "I will read it.\n",
    ),
    (  # sglang deepseekv32_detector.py, "Format 3 - Without DSML tags"
        "deepseek-bare-function-calls", "deepseek-xml",
        'a<function_calls>\n<invoke name="get_weather">\n<parameter name="location"'
        ' string="true">Paris</parameter>\n</invoke>\n</function_calls>b',
        "ab",
    ),
    *(  # vllm deepseekv32_tool_parser.py's block, in each mangled bar
        (
            f"deepseek-dsml-function-calls{suffix}", "deepseek",
            f'a<{bar}DSML{bar}function_calls><{bar}DSML{bar}invoke name="f">'
            f"</{bar}DSML{bar}invoke></{bar}DSML{bar}function_calls>b",
            "ab",
        )
        for bar, suffix in MANGLED_BARS
    ),
    *(  # sgl-project/sglang #40236: DSML invokes with no section wrapper, every bar
        (
            f"deepseek-dsml-invoke{suffix}", "deepseek",
            f'Running.<{bar}DSML{bar}invoke name="Bash"><{bar}DSML{bar}parameter name="command" '
            f'string="true">ls</{bar}DSML{bar}parameter></{bar}DSML{bar}invoke> Done.',
            "Running. Done.",
        )
        for bar, suffix in EVERY_BAR
    ),
    *(  # ggml-org/llama.cpp chat.cpp: DeepSeek-R1-Distill's mangled section openers
        (
            f"deepseek-tool-calls-{name}", "deepseek",
            f"x<｜tool{sep}calls{sep}begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n"
            f"```json\n{{}}\n```<｜tool▁call▁end｜><｜tool{sep}calls{sep}end｜>y",
            "xy",
        )
        for name, sep in (("underscore", "_"), ("space", " "), ("escaped", "\\_"))
    ),
    (  # ggml-org/llama.cpp chat.cpp: the short section opener its DeepSeek R1 parser accepts
        "deepseek-tool-calls-short", "deepseek",
        "x<｜tool▁calls｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}\n```"
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>y",
        "xy",
    ),
    *(  # MoonshotAI kimi-code PR #798: DeepSeek's tokens with ASCII bars, every separator
        (
            f"deepseek-tool-calls{name}-ascii", "deepseek",
            f"x<|tool{sep}calls{sep}begin|><|tool▁call▁begin|>function<|tool▁sep|>f\n"
            f'```json\n{{"a": "<|tool{sep}calls{sep}end|>"}}\n```<|tool▁call▁end|>'
            f"<|tool{sep}calls{sep}end|>y",
            "xy",
        )
        for name, sep in (("", "▁"), ("-underscore", "_"), ("-space", " "), ("-escaped", "\\_"))
    ),
    (  # the same for V3.1's call token and the short section opener
        "deepseek-tool-call-ascii", "deepseek",
        'x<|tool▁call▁begin|>read<|tool▁sep|>{"path": "/a"}<|tool▁call▁end|>y', "xy",
    ),
    (
        "deepseek-tool-calls-short-ascii", "deepseek",
        "x<|tool▁calls|><|tool▁call▁begin|>f<|tool▁sep|>{}<|tool▁call▁end|><｜tool▁calls▁end｜>y",
        "xy",
    ),
    (  # vllm test_mistral_tool_parser.py (v11+): a control token quoted in an argument is data
        "mistral-tool-calls", "mistral",
        'Sure.[TOOL_CALLS]get_weather[ARGS]{"city": "[ARGS] Tokyo"}\n\nIt is sunny.',
        "Sure.\n\nIt is sunny.",
    ),
    (  # sglang harmony_parser.py TextStrategy: the final header's residue opening the reply
        "harmony-final-residue", "harmony-residue",
        "assistantfinalIt looks like you're testing. How can I help?",
        "It looks like you're testing. How can I help?",
    ),
    (  # Augustas11/macprovider #743: gpt-oss with its special tokens stripped
        "harmony-analysis-residue", "harmony-residue",
        "analysisWe need to answer what 2+2 is. Simple.assistantfinalfour",
        "four",
    ),
    (  # kittors/deepseek-web-api #11: the opener lost its bars and DSML
        "deepseek-lost-bars-calls", "deepseek-xml",
        '< calls>\n<|DSML|invoke name="pwsh">\n<|DSML|parameter name="command" string="true">'
        "ls</|DSML|parameter>\n</|DSML|invoke>\n</|DSML|calls>\nDone.",
        "\nDone.",
    ),
    (  # diegosouzapw/OmniRoute PR #13345: the `calls` section with no DSML at all
        "deepseek-bare-calls", "deepseek-xml",
        'Reading.\n<calls>\n<invoke name="read">\n<parameter name="path">/a</parameter>\n'
        "</invoke>\n</calls>\nDone.",
        "Reading.\n\nDone.",
    ),
    (  # ggml-org/llama.cpp PR #15158: the call header's residue, `json` glued to the name
        "harmony-call-residue", "harmony-residue",
        "I need to check the filesystem.\n\nassistantcommentary to=functions.fs_readjson{\n"
        '  "path": "/workspace/config.yml"\n}assistantfinalIt is there.',
        "I need to check the filesystem.\n\nIt is there.",
    ),
    (  # the call header's residue opening the reply, its constraint spaced, a brace quoted
        "harmony-bare-call-residue", "harmony-residue",
        'commentary to=functions.get_weather json{"location": "San Francisco {CA}"} Done.',
        " Done.",
    ),
    (  # sglang harmony_parser.py TextStrategy: a later analysis message after a call
        "harmony-next-analysis-residue", "harmony-residue",
        'commentary to=functions.f json{"a": 1}assistantanalysisCheck it.assistantfinalOk.',
        "Ok.",
    ),
    (  # lmstudio-ai/lmstudio-bug-tracker #1177: MiniMax-M2's bracket variant
        "minimax-bracket-tool-call", "minimax",
        'I will write it. [TOOL_CALL] { "tool": "write", "args": {"path": "a.txt"} } '
        "[/TOOL_CALL] Done.",
        "I will write it.  Done.",
    ),
    (  # Gitlawb/openclaude PR #380: Gemma 4's body without its wrapper tokens
        "gemma-bare-call", "gemma-plain",
        "Writing it now. call:write_file{content:hello,path:a.txt}",
        "Writing it now. ",
    ),
    (  # vllm PR #45832: the bare body with Gemma 4's string quotes and a nested object
        "gemma-bare-call", "gemma-plain",
        'call:get_weather{location:<|"|>Paris {FR}<|"|>,units:{temp:c}} It is sunny.',
        " It is sunny.",
    ),
    (  # vllm seed_oss_tool_parser.py
        "seed-oss-tool-call", "seed-oss",
        "Checking.<seed:tool_call>\n<function=read>\n<parameter=path>/a.md</parameter>\n"
        "</function>\n</seed:tool_call>",
        "Checking.",
    ),
    (  # llama.cpp tests/test-chat.cpp, MiniMax-M3 tests
        "minimax-m3-tool-call", "minimax",
        "</mm:think>]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name=\"special_function\">"
        "]<]minimax[>[<arg1>1]<]minimax[>[</arg1>]<]minimax[>[</invoke>\n"
        "]<]minimax[>[</tool_call>",
        "</mm:think>",
    ),
    (  # vllm nemotron_json_tool_parser.py
        "nemotron-toolcall", "nemotron",
        'Sure.<TOOLCALL>[{"name": "read", "arguments": {"path": "/a.md"}}]</TOOLCALL>',
        "Sure.",
    ),
    (  # zai-org/GLM-5 #84: key/value pairs outside any <tool_call>
        "glm-bare-arguments", "glm",
        "read<arg_key>filePath</arg_key><arg_value>/home/user/notes.md</arg_value>",
        "read",
    ),
    (  # unsloth PR #5624, vllm #44060: a marker quoted inside a call's JSON argument is data
        "hermes-tool-call", "hermes",
        'Saving.<tool_call>\n{"name": "write", "arguments": {"text": "ends with </tool_call>'
        ' and \\"quotes\\""}}\n</tool_call> Saved.',
        "Saving. Saved.",
    ),
    (  # sglang #30480 / PR #30481: a call cut off right after its complete opener (G8)
        "hermes-tool-call", "hermes", "I will check.\n<tool_call>\n", "I will check.\n",
    ),
    (  # llama.cpp tests/test-chat.cpp, Mistral Small 3.2: an id before the arguments
        "mistral-tool-calls", "mistral",
        'Calling.[TOOL_CALLS]special_function[CALL_ID]123456789[ARGS]{"arg1": 1} Done.',
        "Calling. Done.",
    ),
    (  # vllm test_mistral_tool_parser.py, pre-v11: a JSON list, then trailing text
        "mistral-tool-calls", "mistral",
        '[TOOL_CALLS] [{"name": "add", "arguments":{"a": 1, "b": 2}}]\nextra trailing data',
        "\nextra trailing data",
    ),
    (  # mlx-swift-lm ToolTests: the marker quoted inside an argument is data
        "mistral-tool-calls", "mistral",
        '[TOOL_CALLS]get_note[ARGS]{"text": "literal [TOOL_CALLS] marker {x}"} ok',
        " ok",
    ),
    (  # unsloth PR #5624: another marker quoted in a Kimi call's JSON argument
        "kimi-tool-call", "kimi",
        '<|tool_call_begin|>functions.write:0<|tool_call_argument_begin|>{"text": "a'
        ' <|tool_call_end|> b"}<|tool_call_end|>after',
        "after",
    ),
    (  # sglang kimik3_detector.py: Kimi K3's tools section after its answer
        "kimi-k3-tools", "kimi",
        'It is sunny.<|open|>tools<|sep|><|open|>call tool="weather" index="1"<|sep|><|open|>'
        'argument key="city" type="string"<|sep|>北京<|close|>argument<|sep|><|close|>call<|sep|>'
        "<|close|>tools<|sep|>",
        "It is sunny.",
    ),
    (  # vllm test_kimi_k3_tool_parser.py (test_streaming_content_holds_split_message_close)
        "kimi-k3-message-close", "kimi", "Hello<|close|>message<|sep|>", "Hello",
    ),
    (  # NousResearch/hermes-agent #73491, verbatim: an empty answer's framing
        "kimi-k3-response-open", "kimi",
        "<|open|>response<|sep|><|close|>response<|sep|><|close|>message<|sep|>", "",
    ),
    (  # vllm PR #51400 (ai-dynamo's kimi_k3 test: text without tools)
        "kimi-k3-response-close", "kimi",
        "<|open|>response<|sep|>Hello there, the build is green.<|close|>response<|sep|>",
        "Hello there, the build is green.",
    ),
    (  # the K3 channel layout (vllm PR #51400): a whole thinking block, its body reasoning
        "kimi-k3-think", "kimi",
        "<|open|>think<|sep|>The user asks for 6 x 7.<|close|>think<|sep|>"
        "<|open|>response<|sep|>Final answer: 42.<|close|>response<|sep|>",
        "Final answer: 42.",
    ),
    (  # sgl-project/sglang PR #32567, raw output of a live server: the opener in the prompt
        "kimi-k3-think-close", "kimi",
        "<|close|>think<|open|>response<|sep|>Here's the comparison.<|close|>response<|sep|>",
        "Here's the comparison.",
    ),
    (  # sglang test_kimik3_detector.py: a K3 call with no tools section around it
        "kimi-k3-call", "kimi",
        'Weighing it.<|open|>call tool="read" index="1"<|sep|><|open|>argument key="path"'
        ' type="string"<|sep|>/srv/a.md<|close|>argument<|sep|><|close|>call<|sep|> Done.',
        "Weighing it. Done.",
    ),
    (  # the same, cut off by max_tokens in the tool's name (test_markers_only_strip_...)
        "kimi-k3-call", "kimi", 'weighing <|open|>call tool="rea', "weighing ",
    ),
    (  # ggml-org/llama.cpp models/templates/Kimi-K3.jinja: every message's end
        "kimi-k3-end-of-message", "kimi",
        "Done.<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>", "Done.",
    ),
    (  # ggml-org/llama.cpp models/templates/glm_4_5.jinja: the next turn's header
        "glm-user", "glm", "Your notes mention it on page two.<|user|>",
        "Your notes mention it on page two.",
    ),
    (  # a GLM-4.5 parser test of real output: the call turn ends on <|observation|>
        "glm-observation", "glm",
        "Delegating.<arg_key>task</arg_key><arg_value>scan</arg_value><|observation|>",
        "Delegating.",
    ),
    *(  # Meta llama-models prompt formats: a call reply ends with the turn's token
        (f"llama-end-{name}", "llama", f"Nightly at 02:00.{token}", "Nightly at 02:00.")
        for name, token in (
            ("eot-id", "<|eot_id|>"),
            ("eom-id", "<|eom_id|>"),
            ("eot", "<|eot|>"),
            ("eom", "<|eom|>"),
        )
    ),
    (  # ollama model/parsers/deepseek3_test.go (tool_output): the markers go, the text stays
        "deepseek-tool-output-begin", "deepseek",
        "Weather: <｜tool▁output▁begin｜>22°C<｜tool▁output▁end｜> Enjoy!", "Weather: 22°C Enjoy!",
    ),
    (  # the same, its closer alone
        "deepseek-tool-output-end", "deepseek", "22°C<｜tool▁output▁end｜> Enjoy!", "22°C Enjoy!",
    ),
    (  # DeepSeek V3's chat template: a turn's tool outputs
        "deepseek-tool-outputs-begin", "deepseek",
        "a<｜tool▁outputs▁begin｜>b<｜tool▁outputs▁end｜>c", "abc",
    ),
    ("deepseek-tool-outputs-end", "deepseek", "b<｜tool▁outputs▁end｜>c", "bc"),
    (  # vllm #21727: the official V3 template's end of turn after a call
        "deepseek-end-of-sentence", "deepseek", "Done.<｜end▁of▁sentence｜>", "Done.",
    ),
    *(  # vllm test_deepseek_v4_malformed_recovery.py: the section's opener lost
        (
            f"deepseek-dsml-stray-closer{suffix}{'-double-slash' if slash == '//' else ''}",
            "deepseek-xml",
            f"Checking.\n<{slash}{bar}DSML{bar}tool_calls>\nDone.", "Checking.\n\nDone.",
        )
        for bar, suffix in DSML_BARS.items()
        for slash in ("/", "//")
    ),
    *(  # vllm #51914 (test_deepseek_v4_malformed_recovery.py): `toolcalls`, every bar
        (
            f"deepseek-dsml-toolcalls{suffix}", "deepseek",
            f'a<{bar}DSML{bar}toolcalls>\n<{bar}DSML{bar}invoke name="f">x</{bar}DSML{bar}invoke>'
            f"\n</{bar}DSML{bar}tool_calls>b",
            "ab",
        )
        for bar, suffix in DSML_BARS.items()
    ),
    (  # ollama model/parsers/qwen3coder_test.go: a name in another script, no wrapper
        "qwen3-coder-function", "qwen3-coder",
        "查询中。<function=获取天气>\n<parameter=城市>\n北京\n</parameter>\n</function>\n"
        "</tool_call>好的。",
        "查询中。好的。",
    ),
    (  # Qwen3's chat template renders a call's turn `<tool_call>...</tool_call><|im_end|>`
        "chatml-turn-end", "turn-ends", "Nightly at 02:00.<|im_end|>", "Nightly at 02:00.",
    ),
    ("end-of-text", "turn-ends", "Nightly at 02:00.<|endoftext|>", "Nightly at 02:00."),
    (  # typeclaw/typeclaw PR #344, leaked via Fireworks: arguments with their tokens lost
        "kimi-tool-call-arguments", "kimi",
        'channel_reply:0<|tool_call_argument_begin|>{"text": "Build green."}'
        "<|tool_calls_section_end|>\nDone.",
        "channel_reply:0\nDone.",
    ),
    (  # Mistral's chat template: a call's turn ends `</s>`, taken with the call
        "mistral-tool-calls", "mistral",
        'Checking.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}</s>', "Checking.",
    ),
    (  # Gemma 3's turn end, kept by a server that passes special tokens on
        "gemma-end-of-turn", "gemma-plain", "Sure!<end_of_turn>", "Sure!",
    ),
    (  # Gemma 4's chat template: the thinking channel, routed to the reasoning
        "gemma4-thought", "gemma",
        "<|channel>thought\nThe user wants the weather.<channel|>Checking.", "Checking.",
    ),
    (  # Gemma 4's chat template: a call's turn ends `<tool_call|><turn|>`
        "gemma4-turn-end", "gemma",
        'Checking.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|><turn|>',
        "Checking.",
    ),
    (  # llama.cpp tests/test-chat.cpp, Gemma 4 edge cases: a channel closer alone
        "gemma4-stray-channel-close", "gemma", "Hello, world!<channel|>", "Hello, world!",
    ),
    (  # ollama model/parsers/gemma4_test.go: an extra close tag after the call
        "gemma4-stray-call-close", "gemma",
        '<|tool_call>call:f{a:<|"|>x<|"|>}<tool_call|><tool_call|>Done.', "Done.",
    ),
    (  # ollama gemma4_test.go (IgnoresToolResponseBoundaryAfterToolCall)
        "gemma4-tool-response", "gemma",
        '<|tool_call>call:f{a:<|"|>x<|"|>}<tool_call|><|tool_response>response:f{v:<|"|>ok<|"|>}'
        "<tool_response|>Done.",
        "Done.",
    ),
    (  # FunctionGemma's response, written by the model after its call
        "functiongemma-response", "gemma-plain",
        "a<start_function_response>response:f{value:<escape>ok<escape>}<end_function_response>b",
        "ab",
    ),
    (  # vllm tests/tool_parsers/test_gemma4_regex_and_bare_calls.py: closed by <turn|>
        "gemma4-tool-call", "gemma",
        'Running it.<|tool_call>call:gdb{args:<|"|>-batch -ex run /tmp/poc<|"|>}<turn|>',
        "Running it.",
    ),
    *(  # zed-industries/zed #59503: DeepSeek V4.1's spaced DSML, every bar
        (
            f"deepseek-dsml-calls{suffix}-v41", "deepseek",
            f'a<{bar}DSML{bar} calls>\n<{bar}DSML{bar} invoke name="edit_file">\n<{bar}DSML{bar}'
            ' parameter name="edits" string="false">[{"old_text":"before","new_text":"after"}]'
            f"</{bar}DSML{bar} parameter>\n</{bar}DSML{bar} invoke>\n</{bar}DSML{bar} calls>b",
            "ab",
        )
        for bar, suffix in EVERY_BAR
    ),
    *(  # DSML's other blocks opened in V4.1's spacing, every bar
        (
            f"deepseek-dsml-{block.replace('_', '-')}{suffix}-v41", "deepseek",
            f'a<{bar}DSML{bar} {block}>\n<{bar}DSML{bar} invoke name="f">\n<{bar}DSML{bar}'
            f' parameter name="p" string="true">v</{bar}DSML{bar} parameter>\n'
            f"</{bar}DSML{bar} invoke>\n</{bar}DSML{bar} {block}>b",
            "ab",
        )
        for block in ("function_calls", "tool_calls", "tool_use")
        for bar, suffix in EVERY_BAR
    ),
    *(  # vllm vllm/parser/deepseek_v41.py: a V4.1 invoke with no section wrapper, every bar
        (
            f"deepseek-dsml-invoke{suffix}-v41", "deepseek",
            f'Running.<{bar}DSML{bar} invoke name="Bash"><{bar}DSML{bar} parameter name="command"'
            f' string="true">ls</{bar}DSML{bar} parameter></{bar}DSML{bar} invoke> Done.',
            "Running. Done.",
        )
        for bar, suffix in EVERY_BAR
    ),
    (  # vllm tests/tool_parsers (llama3_json): a reply of nothing but calls, joined by "; "
        "llama3-json-reply", "llama-json",
        '{"name": "get_weather", "parameters": {"city": "San Francisco"}}; '
        '{"name": "get_time", "arguments": {"tz": "PST \\"quoted\\" }"}}',
        "",
    ),
    (  # vllm tests/tool_parsers (llama4_pythonic): a reply of nothing but a list of calls
        "llama-pythonic-reply", "llama-pythonic",
        "[get_weather(city='San Francisco', metric='celsius'), register_user(name='John Doe',"
        " age=37, address={'city': 'San Francisco', 'state': 'CA'}, role=None)]",
        "",
    ),
    (  # raullenchai/Rapid-MLX PR #1592: LFM imitating its transcript
        "transcript-echo", "echo",
        'Let me look.[Calling tool: browse({"url": "https://www.iana.org/help/example-domains"})]',
        "Let me look.",
    ),
]  # fmt: skip


def registry_for(profile: str | None) -> Registry:
    return DEFAULT_REGISTRY if profile is None else registry_with(profile)


def test_a_skip_cut_after_its_first_character_is_held_then_read_whole():
    """Mistral's `[ARGS]` cut after its `[`: the `[` is held until the next chunk shows it
    opens a skip, not a JSON list (the sweep below cuts every leak at every offset unmeasured
    by coverage; this is the cut that reaches the hold)."""
    text = 'Calling.[TOOL_CALLS]f[CALL_ID]1[ARGS]{"a": 1} Done.'
    assert run(cut_at(text, text.index("[ARGS]") + 1), registry_with("mistral"))[0] == (
        "Calling. Done."
    )


@pytest.mark.sweep
@pytest.mark.parametrize(("name", "profile", "text", "expected"), INCIDENTS)
def test_real_leak_is_stripped_at_any_chunking(
    name: str, profile: str | None, text: str, expected: str
):
    registry = registry_for(profile)
    assert name in {p.name for p in registry}
    outputs = {run(chunked(text, size), registry)[0] for size in (1, 7, len(text))}
    outputs |= {run(cut_at(text, i), registry)[0] for i in range(len(text) + 1)}
    assert outputs == {expected}


@pytest.mark.parametrize(
    ("name", "text"), [(name, text) for name, profile, text, _ in INCIDENTS if profile]
)
def test_profiles_are_off_by_default(name: str, text: str):
    assert run([text])[0] == text


def test_every_pattern_has_a_real_fixture():
    covered = {name for name, *_ in INCIDENTS}
    everything = {p.name for p in DEFAULT_REGISTRY} | {
        p.name for profile in PROFILES.values() for p in profile
    }
    assert everything == covered


def test_every_pattern_names_its_public_source():
    for pattern in (*DEFAULT_REGISTRY, *(p for r in PROFILES.values() for p in r)):
        assert pattern.source.strip(), pattern.name


# --- fenced code blocks ------------------------------------------------------------------

HERMES = registry_with("hermes")
EXAMPLE = '<tool_call>{"name": "read", "arguments": {"path": "/a"}}</tool_call>'


@pytest.mark.parametrize("fence", ["```", "~~~", "```xml", "  ```", "````"])
def test_plain_marker_inside_a_fenced_code_block_is_kept(fence: str):
    close = fence.strip().rstrip("xml")
    text = f"The format looks like this:\n{fence}\n{EXAMPLE}\n{close}\nand then {EXAMPLE}done."
    expected = f"The format looks like this:\n{fence}\n{EXAMPLE}\n{close}\nand then done."
    for size in (1, 5, len(text)):
        assert run(chunked(text, size), HERMES)[0] == expected


@pytest.mark.parametrize(
    "inside",
    [
        "````xml\n```\n{example}\n````",  # a shorter run inside does not close the block
        "~~~~\n~~~\n{example}\n~~~~",
        "```xml\n``` trailing info\n{example}\n```",  # text after the run: no close
        "```\n~~~\n{example}\n```",  # the other character: no close
    ],
    ids=["shorter-backticks", "shorter-tildes", "text-after-the-run", "other-character"],
)
def test_a_fence_closes_only_as_commonmark_says_so_the_example_inside_is_kept(inside: str):
    """vllm tests/parser/engine/test_qwen3_fenced_examples.py: a run shorter than the one
    that opened the block, or one with text after it, is the block's content."""
    text = "before\n" + inside.format(example=EXAMPLE) + "\nafter " + EXAMPLE + "done."
    expected = "before\n" + inside.format(example=EXAMPLE) + "\nafter done."
    for size in (1, 5, len(text)):
        assert run(chunked(text, size), HERMES)[0] == expected, size


def test_plain_marker_after_an_indented_code_line_is_stripped():
    text = f"    ```\n{EXAMPLE}x"
    assert run([text], HERMES)[0] == "    ```\nx"


def test_tilde_fence_is_not_closed_by_backticks():
    text = f"~~~\n```\n{EXAMPLE}\n~~~\n"
    assert run([text], HERMES)[0] == text


def test_special_token_inside_a_fenced_code_block_is_still_stripped():
    text = "```\n<|tool_call_start|>[read(path='/a')]<|tool_call_end|>\n```\n"
    assert run(chunked(text, 3))[0] == "```\n\n```\n"


def test_hold_back_of_a_plain_marker_prefix_stops_inside_a_fence():
    f = ScaffoldingFilter(HERMES)
    assert f.feed("```\nsee <tool_c") == "```\nsee <tool_c"
    assert f.held == ""
    g = ScaffoldingFilter(HERMES)
    assert g.feed("see <tool_c") == "see "
    assert g.held == "<tool_c"


# --- inline code ---------------------------------------------------------------------------

QWEN3_CODER = registry_with("hermes", "qwen3-coder")


@pytest.mark.parametrize(
    "text",
    [
        "Qwen3-Coder opens a call with `<function=read>` and closes it with `</function>`.",
        f"The call `{EXAMPLE}` is what Qwen writes.",
        "Double ticks: ``<function=a>`` and ``a ` <function=b>`` stay.",
        "An unclosed tick ` <function=read> keeps the rest of its line.",
    ],
)
def test_plain_marker_inside_inline_code_is_kept(text: str):
    for chunks in (chunked(text, 1), chunked(text, 4), [text]):
        assert run(chunks, QWEN3_CODER)[0] == text


def test_inline_code_ends_with_its_line_and_its_closing_run():
    text = f"`a`{EXAMPLE}x\n` b\n{EXAMPLE}y"
    assert run(chunked(text, 2), HERMES)[0] == "`a`x\n` b\ny"


def test_a_run_of_another_length_does_not_close_inline_code():
    text = f"``a ` {EXAMPLE} b``{EXAMPLE}c"
    assert run(chunked(text, 1), HERMES)[0] == f"``a ` {EXAMPLE} b``c"


def test_special_token_inside_inline_code_is_still_stripped():
    text = "`<|tool_call_start|>[read(path='/a')]<|tool_call_end|>`"
    assert run(chunked(text, 3))[0] == "``"


# --- registries --------------------------------------------------------------------------


def test_registry_with_adds_profiles_to_the_default():
    names = {p.name for p in registry_with("hermes", "kimi")}
    assert {"lfm2-tool-call", "hermes-tool-call", "kimi-tool-call"} <= names


def test_registry_with_unknown_profile_names_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown profile.*nope.*hermes"):
        registry_with("nope")


def test_later_pattern_with_the_same_opener_replaces_the_earlier():
    phi = Pattern("phi4", "span", "<|tool_call|>", ends=("<|/tool_call|>",), source="test")
    registry = (*DEFAULT_REGISTRY, phi)
    merged = registry_with(base=registry)
    assert [p for p in merged if p.start == "<|tool_call|>"] == [phi]
    assert run(["a<|tool_call|>{}<|/tool_call|>b"], merged)[0] == "ab"


def test_an_opener_inside_another_is_allowed_only_where_its_boundary_walls_it_off():
    inner = Pattern("inner", "token", "analysis", special=False, boundary="word", source="test")
    outer = Pattern("outer", "token", "assistantanalysis", special=False, source="test")
    assert run(["analysis, assistantanalysis."], (inner, outer))[0] == ", ."
    anywhere = Pattern("anywhere", "token", "analysis", special=False, source="test")
    with pytest.raises(ValueError, match="is inside"):
        ScaffoldingFilter((anywhere, outer))


def test_opener_that_is_a_prefix_of_another_is_refused():
    ambiguous = (
        Pattern("short", "token", "<|tool", source="test"),
        *DEFAULT_REGISTRY,
    )
    with pytest.raises(ValueError, match="is a prefix of"):
        ScaffoldingFilter(ambiguous)


@pytest.mark.parametrize(
    ("kind", "ends"), [("span", ()), ("token", ("x",)), ("to_end", ("x",)), ("span", ("",))]
)
def test_pattern_kind_and_ends_must_agree(kind: str, ends: tuple[str, ...]):
    with pytest.raises(ValueError, match="end markers"):
        Pattern("p", kind, "<x>", ends=ends, source="test")  # type: ignore[arg-type]


def test_empty_start_marker_is_refused():
    with pytest.raises(ValueError, match="empty start"):
        Pattern("p", "token", "", source="test")


def test_default_registry_is_exactly_the_lfm2_entries():
    assert [(p.kind, p.start, p.ends) for p in DEFAULT_REGISTRY] == [
        ("span", "<|tool_call_start|>", ("<|tool_call_end|>",)),
        ("token", "<|tool_calls|>", ()),
        ("token", "<|tool_call|>", ()),
    ]


def shape_table() -> str:
    """docs/contract.md's table of every shape, its profile and its public source."""
    rows = [
        "| pattern | profile | kind | opens with | ends with | source |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    by_profile = [(None, DEFAULT_REGISTRY), *PROFILES.items()]
    for profile, registry in by_profile:
        for p in registry:
            ends = ", ".join(f"`{cell(e)}`" for e in p.ends) or {
                "token": "(itself)",
                "to_end": "(the end)",
                "braced": "the `}` closing its first `{`",
                "json_value": "the close of its first object or list",
                "json_reply": "the reply's end: the whole reply, when it is nothing but calls",
                "pythonic_reply": "the reply's end: the whole reply, when it is nothing but a"
                " list of calls",
                "harmony": "its message's end: `<\\|end\\|>`, `<\\|call\\|>`, `<\\|return\\|>`"
                " or the next header; routed by its header (below)",
            }.get(p.kind, "")
            if p.quotes:
                quotes = " or ".join(f"`{cell(q)}`" for q in p.quotes)
                ends += f" (none between two {quotes} quotes)"
            opens = f"`{cell(p.start)}`"
            if p.kind == "harmony":
                opens = "`<\\|start\\|>`, `<\\|channel\\|>`, or ` to=` at the reply's start"
            rows.append(
                f"| `{p.name}` | {f'`{profile}`' if profile else '(default)'} | {p.kind}"
                f" | {opens} | {ends} | {cell(p.source)} |"
            )
    return "\n".join(rows)


def cell(text: str) -> str:
    """`text` for a markdown table cell: its pipes escaped."""
    return text.replace("|", "\\|")


def test_the_contract_lists_every_shape_with_its_source():
    contract = (Path(__file__).parents[3] / "docs" / "contract.md").read_text(encoding="utf-8")
    assert shape_table() in contract


# --- documented limits (docs/contract.md, "Deliberate limits") ----------------------------

DEEPSEEK = auto_registry("deepseek-v4-flash")
LIMITS = [
    pytest.param(  # can1357/oh-my-pi PR #10558; vllm's DSML malformed-recovery tests
        "Done.</｜DSML｜parameter>\n</｜DSML｜invoke>\n",
        "Done.\n\n",
        id="stray-closers-go-for-a-deepseek-name",
    ),
    pytest.param(  # osaurus-ai/osaurus PR #1242: a misspelled block name, its closer stray
        "a<｜DSML｜tool_ccalls>x</｜DSML｜tool_ccalls>b",
        "a<｜DSML｜tool_ccalls>xb",
        id="misspelled-block-is-text-its-closer-stray",
    ),
    pytest.param(  # vllm #51914: `toolcalls`, closed as `tool_calls`
        '<｜DSML｜toolcalls>\n<｜DSML｜invoke name="f">x</｜DSML｜invoke>\n</｜DSML｜tool_calls>b',
        "b",
        id="toolcalls-misspelling-closed-as-tool-calls",
    ),
    pytest.param(  # harmony's malformed first message: no header, so no channel to route by
        "I must refuse<|end|>",
        "I must refuse",
        id="harmony-text-before-end-with-no-header-is-answer",
    ),
]


@pytest.mark.parametrize(("text", "shown"), LIMITS)
def test_a_documented_limit_behaves_as_documented_at_any_chunking(text: str, shown: str):
    for size in (1, 7, len(text)):
        assert run(chunked(text, size), DEEPSEEK)[0] == shown, size


QWEN = auto_registry("Qwen/Qwen3-8B")
CALL_OBJECT = '{"name": "special_function", "arguments": {"arg1": 1}}'


@pytest.mark.parametrize(
    "text",
    [
        f"```json\n{CALL_OBJECT}\n```",
        f"```xml\n<response>\n{CALL_OBJECT}\n</response>\n```",
        f"```\n{CALL_OBJECT}\n```",
        f"This is not a tool call:\n{CALL_OBJECT}",
        "<response>The answer is 4.</response>",
        "<json>[1, 2]</json>",
    ],
)
def test_a_call_object_in_a_fence_or_after_prose_stays_text_for_a_hermes_name(text: str):
    """docs/contract.md, "Deliberate limits": llama.cpp's Hermes 2 Pro parser reads these as
    calls; the filter keeps them, as an answer about tool calling shows them (G7)."""
    for size in (1, 7, len(text)):
        assert run(chunked(text, size), QWEN)[0] == text, size


def test_a_mistral_call_under_a_name_of_no_family_is_shown():
    """docs/contract.md, "Deliberate limits": `[TOOL_CALLS]name[ARGS]` for Mistral names."""
    text = 'Sure.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
    assert run(chunked(text, 7), auto_registry("my-local-model"))[0] == text
    assert run(chunked(text, 7), auto_registry("mistral-small"))[0] == "Sure."


def test_a_tool_code_fence_stays_text_for_a_gemma_name():
    """docs/contract.md, "Deliberate limits": Google's Gemma function-calling guide has the
    model answer in a ```` ```tool_code ```` fence; a fence is what an example shows (G7)."""
    text = 'Let me check.\n```tool_code\nget_weather(location="Paris")\n```\nIt is sunny.'
    for size in (1, 7, len(text)):
        assert run(chunked(text, size), auto_registry("gemma3:27b"))[0] == text, size


def test_a_tool_call_never_closed_runs_to_the_end_past_its_function_close():
    """docs/contract.md, "Deliberate limits": G8 holds though `</function>` came."""
    text = "Checking.\n<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\nok"
    for size in (1, 7, len(text)):
        assert run(chunked(text, size), auto_registry("qwen3.6:35b"))[0] == "Checking.\n", size


GPT_OSS = auto_registry("gpt-oss-20b")


def test_a_call_before_the_first_residue_answer_is_that_analysis_reasoning_not_the_answer():
    text = 'analysisI will look.assistantcommentary to=functions.read json{"path": "/a"}'
    for size in (1, 7, len(text)):
        f = ScaffoldingFilter(GPT_OSS)
        shown = "".join(f.feed(chunk) for chunk in chunked(text, size)) + f.flush()
        assert (shown, f.take_reasoning()) == ("", text.removeprefix("analysis")), size


def test_case_folded_harmony_residue_is_text():
    text = "ANALYSISWe answer.ASSISTANTFINALFour."
    for size in (1, 7, len(text)):
        assert run(chunked(text, size), GPT_OSS)[0] == text, size


@pytest.mark.parametrize(
    ("opener", "closer"),
    [("<｜DSML｜ invoke", "</｜DSML｜invoke>"), ("<｜DSML｜invoke", "</｜DSML｜ invoke>"),
     ("<｜DSML｜ calls>", "</｜DSML｜calls>"), ("<｜DSML｜tool_calls>", "</｜DSML｜ tool_calls>")],
)  # fmt: skip
def test_a_dsml_block_opened_in_one_spacing_ends_at_its_closer_in_the_other(opener, closer):
    """Regression: V4.1's space after the bars on the opener only ran the span to the
    reply's end, and the answer after the call never showed."""
    text = f'Checking.{opener} name="read">/a{closer} The file is empty.'
    for size in (1, 7, len(text)):
        assert run(chunked(text, size), DEEPSEEK)[0] == "Checking. The file is empty.", size


def test_a_dsml_block_closed_with_a_doubled_slash_ends_there():
    text = (
        'Running.<｜DSML｜tool_calls><｜DSML｜invoke name="Bash"><｜DSML｜parameter name="c"'
        ' string="true">ls<//｜DSML｜parameter><//｜DSML｜invoke><//｜DSML｜tool_calls> Done.'
    )
    for size in (1, 7, len(text)):
        assert run(chunked(text, size), DEEPSEEK)[0] == "Running. Done.", size


def test_a_function_tags_json_body_is_read_raw_so_a_quoted_closer_ends_it():
    """docs/contract.md, "Deliberate limits": `<function=f>{...}` opens with the name, not
    with JSON, so its body is read as the engines read it, raw."""
    text = 'a<function=f>{"t": "x </function> y"}</function>b'
    for size in (1, 7, len(text)):
        assert run(chunked(text, size), QWEN)[0] == 'a y"}</function>b', size


def test_gemma4s_thinking_in_the_answer_is_routed_to_the_reasoning():
    text = "<|channel>thought\nThe user wants 6 x 7.<channel|>42."
    for size in (1, 7, len(text)):
        shown, thought, _ = reasoned(chunked(text, size), auto_registry("gemma-4-e4b"))
        assert (shown, thought) == ("42.", "\nThe user wants 6 x 7.")


def test_kimi_k3s_thinking_in_the_answer_is_routed_to_the_reasoning():
    """sgl-project/sglang PR #32567: K3's thinking channel written as text is reasoning
    (G9), never the answer, whatever the chunking."""
    text = (
        "<|open|>think<|sep|>The user asks for 6 x 7.<|close|>think<|sep|>"
        "<|open|>response<|sep|>42.<|close|>response<|sep|>"
    )
    for size in (1, 7, len(text)):
        shown, thought, _ = reasoned(chunked(text, size), auto_registry("kimi-k3"))
        assert (shown, thought) == ("42.", "The user asks for 6 x 7.")
