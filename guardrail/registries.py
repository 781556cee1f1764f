"""The markup the filter strips, as data: LFM2's default registry and the other families'.

Each pattern names the public template, parser or leak report it comes from
(`Pattern.source`) and has a real leaked answer among the unit fixtures.
`DEFAULT_REGISTRY` is LFM2's markup; every other family's format is a profile
(`registry_with("hermes", ...)`), picked by name in `guardrail.model_profiles`.

Deliberate choices:
- A marker that reads like prose carries a `hint` (guardrail/shapes.py), so a sentence
  that names `<tool_call>` or `[TOOL_CALLS]` keeps it.
- Residue (what is left once a server dropped special tokens: Gemma's `call:name{...}`)
  matches only at a word or answer start, in profiles `auto` adds for that family alone.
- Mangled spellings (DeepSeek's DSML bars) are patterns of their own, each a plain
  string: the filter never matches markers loosely.
- `OPT_IN` profiles (the `[Calling tool: ...]` echo) are never chosen by `auto` nor
  `all`: too prose-like for anyone but a person who saw it.
"""

from __future__ import annotations

from guardrail.patterns import Boundary, Pattern, Registry
from guardrail.shapes import NAME, SPACE, Chars, Lit, alt, seq

DEFAULT_REGISTRY: Registry = (
    Pattern(
        "lfm2-tool-call",
        "span",
        "<|tool_call_start|>",
        ends=("<|tool_call_end|>",),
        source="LiquidAI LFM2 chat template; vllm vllm/tool_parsers/lfm2_tool_parser.py",
    ),
    Pattern(
        "tool-calls-token",
        "token",
        "<|tool_calls|>",
        source="LFM2-family standalone token seen in leaked answers (contract clause G6)",
    ),
    Pattern(
        "tool-call-token",
        "token",
        "<|tool_call|>",
        source="IBM Granite 3.0 / Phi-4-mini marker seen bare (vllm granite_tool_parser.py)",
    ),
)

_VLLM = "vllm vllm/tool_parsers/"

CALL_BODY = alt(
    seq(SPACE, alt(Lit("{"), Lit("["), Lit("<function="))),
    seq(Chars(r"[\r\n]", 0, 2), NAME, SPACE, alt(Lit("<arg_key>"), Lit("</tool_call>"))),
    seq(NAME, Chars("[ ]", 0, 2), Lit("{")),
    seq(NAME, Lit(" "), NAME, Lit("=")),
)
"""What follows `<tool_call>` in a real call: JSON, a list, Qwen3-Coder's `<function=`, or
GLM's name (right after the tag or on the next line: ollama's glm46 parser tests), then its
first `<arg_key>` (or the end, with no arguments); or GLM-4.7's malformed `name {json}` and
`name key=value` (mlx-lm PR #792 reads both). Prose such as `<tool_call> and </tool_call>`
fits none of them."""
JSON_BODY = seq(SPACE, alt(Lit("{"), Lit("[")))
"""A JSON object or array, after at most a few blanks."""
MISTRAL_ARGS = alt(Lit("[ARGS]"), Lit("[CALL_ID]"), Lit("{"))
"""What follows the function name in a Mistral v11+ call: its arguments, or first its id."""

HARMONY_RECIPIENT = seq(
    NAME,
    SPACE,
    alt(Lit("{"), seq(alt(seq(Lit("<|constrain|>"), NAME), NAME), SPACE, Lit("{"))),
)
"""What follows `to=` in gpt-oss's call header once a server dropped its tokens: the
recipient (`functions.get_weather`), its constraint spaced or glued (` json`, `json`, the
NAME absorbing the glued form) and the JSON arguments."""
_HARMONY_CALL_OPENERS: tuple[tuple[str, str, Boundary], ...] = (
    ("harmony-call-residue", "assistantcommentary to=", "any"),
    ("harmony-bare-call-residue", "commentary to=", "word"),
)
"""The call header's residue mid-answer, and the same as a word (the reply's first)."""
_HARMONY_CALL_RESIDUE = (
    "gpt-oss's tool-call header with its special tokens stripped, `commentary to=functions.X"
    " json{...}` (the constraint glued to the name in ggml-org/llama.cpp PR #15158)"
)

DSML_BARS = {
    "｜": "",
    "｜｜": "-doubled",
    "‖": "-u2016",
    "|": "-ascii",
    "||": "-ascii-doubled",
    " | ": "-ascii-padded",
}
"""DeepSeek's DSML bar (U+FF5C) and the spellings models mangle it into: doubled and
U+2016 (lsdefine/GenericAgent #804), ASCII (cline/cline #13348), ASCII doubled and ASCII
with a space each side (AgentFlocks/flocks PR #687)."""
_DSML_SOURCES = {
    "function_calls": f"{_VLLM}deepseekv32_tool_parser.py",
    "tool_calls": "DeepSeek V4 DSML, per sgl-project/sglang #40236 and #35736",
    "invoke": "DSML without its section wrapper, per sgl-project/sglang #40236",
    " calls": "DeepSeek V4.1 DSML, a space after the bars: vllm deepseek_v41 parser;"
    " zed-industries/zed #59503",
    " invoke": "DeepSeek V4.1 DSML without its section wrapper (zed-industries/zed #59503)",
    "calls": "DSML's `calls` section with no space: kittors/deepseek-web-api #11;"
    " diegosouzapw/OmniRoute PR #13345",
    "tool_use": "DSML's `tool_use` section: AgentFlocks/flocks PR #687",
    "toolcalls": "DSML's `tool_calls` wrapper misspelled, closed as `tool_calls` (vllm #51914;"
    " vllm tests/parser/engine/test_deepseek_v4_malformed_recovery.py)",
    **{
        f" {block}": "DSML's other blocks in V4.1's spacing, a space after the bars (the"
        " closers of every block accept both spacings; vllm deepseek_v41 parser)"
        for block in ("function_calls", "tool_calls", "tool_use")
    },
}


_DSML_CLOSED_AS = {"toolcalls": ("toolcalls", "tool_calls")}
"""The blocks whose closers also close a misspelled block."""


def _dsml_closers(block: str) -> tuple[str, ...]:
    """The closers of a DSML `block` in every bar spelling, with one slash or two, and with
    V4.1's space after the bars or without: a block opened in one spelling and closed in the
    other must not run on to the reply's end and take the answer after it with it."""
    name = block.strip()
    spellings = (block, name if block != name else f" {name}")  # its own first
    return tuple(
        f"<{slash}{b}DSML{b}{spelling}>"
        for spelling in spellings
        for slash in ("/", "//")
        for b in DSML_BARS
    )


_DSML_INVOKE = alt(
    Lit("<invoke name="), *(Lit(f"<{b}DSML{b}{s}invoke") for b in DSML_BARS for s in ("", " "))
)
"""An invoke, DSML's in any bar spelling (V4.1's space too) or with its markers stripped."""


def _dsml() -> Registry:
    """The DSML blocks in every bar spelling; a block closes in any spelling, its slash
    doubled too (`<//` before the bar, named among this year's spellings). An opener
    needs no `>`: models end it with `|` (CJackHwang/ds2api #389) or the turn ends right
    after it (earendil-works/pi #3712)."""
    return tuple(
        Pattern(
            f"deepseek-dsml-{block.strip().replace('_', '-')}{suffix}"
            + ("-v41" if block.startswith(" ") else ""),
            "span",
            f"<{bar}DSML{bar}{block}",
            ends=tuple(
                c for name in _DSML_CLOSED_AS.get(block, (block,)) for c in _dsml_closers(name)
            ),
            source=_DSML_SOURCES[block]
            + (
                "" if not suffix else "; bar variants: GenericAgent #804, cline #13348, flocks #687"
            ),
        )
        for block in _DSML_SOURCES
        for bar, suffix in DSML_BARS.items()
    )


def _dsml_stray_closers() -> Registry:
    """A DSML closer with no block open (its opener lost, vllm
    tests/parser/engine/test_deepseek_v4_malformed_recovery.py): the tag alone, in every bar
    spelling and slash, any block's name. For DeepSeek names only (its end is a bare `>`)."""
    return tuple(
        Pattern(
            f"deepseek-dsml-stray-closer{suffix}{'-double-slash' if slash == '//' else ''}",
            "span",
            f"<{slash}{bar}DSML{bar}",
            ends=(">",),
            special=False,
            hint=seq(Chars("[ ]", 0, 2), NAME, Lit(">")),
            source="a DSML closer whose block never opened: vllm"
            " tests/parser/engine/test_deepseek_v4_malformed_recovery.py (missing start wrapper)",
        )
        for bar, suffix in DSML_BARS.items()
        for slash in ("/", "//")
    )


_DEEPSEEK_SEPS = {"": "▁", "-underscore": "_", "-space": " ", "-escaped": "\\_"}
"""DeepSeek's word separator (U+2581) and DeepSeek-R1-Distill's mangled ones, which
llama.cpp's parser accepts."""
_DEEPSEEK_BARS = {"": "｜", "-ascii": "|"}
"""DeepSeek's bar (U+FF5C) and the ASCII one models and servers write in its place
(MoonshotAI kimi-code PR #798 reads both)."""


def _deepseek_closers(word: str) -> tuple[str, ...]:
    """The ends of a DeepSeek `word` section (`calls`, `call`): in every separator and bar,
    so a section opened in one spelling and closed in another ends there."""
    return tuple(
        f"<{bar}tool{sep}{word}{sep}end{bar}>"
        for bar in _DEEPSEEK_BARS.values()
        for sep in _DEEPSEEK_SEPS.values()
    )


def _deepseek() -> Registry:
    """DeepSeek V3 to V3.1's section and call tokens in every separator and bar spelling.
    The ASCII call token with `_` is Kimi K2's `<|tool_call_begin|>` (its own profile)."""
    mangled = "ggml-org/llama.cpp common/chat.cpp (DeepSeek-R1-Distill variants)"
    ascii_bar = "; ASCII bars: MoonshotAI kimi-code PR #798"
    return (
        *(
            Pattern(
                f"deepseek-tool-calls{name}{bar_name}",
                "span",
                f"<{bar}tool{sep}calls{sep}begin{bar}>",
                ends=_deepseek_closers("calls"),
                json_strings="always",
                source=(
                    f"{_VLLM}deepseekv3_tool_parser.py; google/adk-python PR #5654"
                    if not name
                    else mangled
                )
                + (ascii_bar if bar_name else ""),
            )
            for name, sep in _DEEPSEEK_SEPS.items()
            for bar_name, bar in _DEEPSEEK_BARS.items()
        ),
        *(
            Pattern(
                f"deepseek-tool-call{bar_name}",
                "span",
                f"<{bar}tool▁call▁begin{bar}>",
                ends=_deepseek_closers("call"),
                json_strings="always",
                source=f"{_VLLM}deepseekv31_tool_parser.py" + (ascii_bar if bar_name else ""),
            )
            for bar_name, bar in _DEEPSEEK_BARS.items()
        ),
        *(
            Pattern(
                f"deepseek-tool-calls-short{bar_name}",
                "span",
                f"<{bar}tool▁calls{bar}>",
                ends=_deepseek_closers("calls"),
                json_strings="always",
                source=mangled + (ascii_bar if bar_name else ""),
            )
            for bar_name, bar in _DEEPSEEK_BARS.items()
        ),
    )


def _deepseek_turn_tokens() -> Registry:
    """The tokens around a DeepSeek call that are not the call: a tool's output the model
    wrote itself (the markers go, its text stays, as ollama's parser does) and the end of
    the turn."""
    tokens = {
        "tool-output-begin": "<｜tool▁output▁begin｜>",
        "tool-output-end": "<｜tool▁output▁end｜>",
        "tool-outputs-begin": "<｜tool▁outputs▁begin｜>",
        "tool-outputs-end": "<｜tool▁outputs▁end｜>",
        "end-of-sentence": "<｜end▁of▁sentence｜>",
    }
    return tuple(
        Pattern(
            f"deepseek-{name}",
            "token",
            token,
            source="DeepSeek V3 chat template (tool outputs, the turn's end); ollama"
            " model/parsers/deepseek3_test.go (tool_output markers stripped, text kept);"
            " vllm #21727",
        )
        for name, token in tokens.items()
    )


_LLAMA_CPP_HERMES = (
    "ggml-org/llama.cpp tests/test-chat.cpp (COMMON_CHAT_FORMAT_HERMES_2_PRO: what its parser"
    " accepts from Qwen 2.5/3 and Hermes)"
)
CALL_JSON = seq(SPACE, Lit("{"), Chars(r"[ \t\r\n]", 0, 16), alt(Lit('"name"'), Lit('"arguments"')))
"""A JSON call object's start: `{"name"` (or Hermes 2 Pro's `{"arguments"` first), its key
on the next line indented as far as a pretty-printer puts it."""

FUNCTION_TAG = Pattern(
    "qwen3-coder-function",
    "span",
    "<function=",
    ends=("</function>",),
    special=False,
    hint=seq(NAME, Lit(">"), SPACE, alt(Lit("<parameter="), Lit("</function>"), Lit("{"))),
    trailers=("</tool_call>",),
    source=f"{_VLLM}qwen3coder_tool_parser.py; bare, ending in </tool_call>: ollama/ollama"
    " #16686; with a JSON body as function-json-tag",
)
"""`<function=NAME>`, then Qwen3-Coder's `<parameter=` or a JSON body (the `qwen3-coder`
profile's, a superset of FUNCTION_JSON_TAG, which it replaces in a registry with both)."""
FUNCTION_JSON_TAG = Pattern(
    "function-json-tag",
    "span",
    "<function=",
    ends=("</function>",),
    special=False,
    hint=seq(NAME, Lit(">"), JSON_BODY),
    source=f"{_LLAMA_CPP_HERMES}; Functionary v3.1 and Meta llama-models"
    " models/llama3_1/prompt_format.md (Llama 3.1's custom tool format)",
)
"""`<function=NAME>` and a JSON body, not Qwen3-Coder's XML: for the families whose engines
read it, which do not write that XML (a Qwen3-Coder call inside Seed-OSS's wrapper stays
whole for them)."""
FUNCTION_NAME_TAG = Pattern(
    "function-name-tag",
    "span",
    "<function name=",
    ends=("</function>",),
    special=False,
    hint=seq(Lit('"'), NAME, Lit('">'), JSON_BODY),
    json_strings="always",
    source=_LLAMA_CPP_HERMES,
)
"""`<function name="NAME">` and a JSON body."""


def _hermes_wrappers() -> Registry:
    """The other tags llama.cpp's Hermes 2 Pro parser reads a JSON call from."""
    return tuple(
        Pattern(
            f"hermes-{tag.replace('_', '-')}-wrapper",
            "span",
            f"<{tag}>",
            ends=(f"</{tag}>",),
            special=False,
            hint=CALL_JSON,
            json_strings="always",
            source=_LLAMA_CPP_HERMES,
        )
        for tag in ("tool", "tools", "response", "json", "JSON", "xml", "function_call")
    )


PROFILES: dict[str, Registry] = {
    "hermes": (
        Pattern(
            "hermes-tool-call",
            "span",
            "<tool_call>",
            ends=("</tool_call>",),
            special=False,
            hint=CALL_BODY,
            json_strings="leading",
            source=f"{_VLLM}hermes_tool_parser.py (Hermes, Qwen2.5/3, Granite 4, GLM-4.5+)",
        ),
        *_hermes_wrappers(),
        FUNCTION_JSON_TAG,
        FUNCTION_NAME_TAG,
    ),
    "function-tag": (FUNCTION_JSON_TAG, FUNCTION_NAME_TAG),
    "qwen3-coder": (FUNCTION_TAG,),  # after the two above: its `<function=` is the wider one
    "mistral": (
        Pattern(
            "mistral-tool-calls",
            "json_value",
            "[TOOL_CALLS]",
            special=False,
            hint=seq(SPACE, alt(Lit("["), Lit("{"), seq(NAME, SPACE, MISTRAL_ARGS))),
            skips=("[ARGS]", "[CALL_ID]"),
            trailers=("</s>",),
            source=f"{_VLLM}mistral_tool_parser.py and its tests (no end marker: the call ends"
            " with its JSON; mlx-lm PR #1448); `[CALL_ID]`: llama.cpp tests/test-chat.cpp"
            " (Mistral Small 3.2); the `</s>` its chat template ends a call's turn with goes"
            " with it (HTML's strikethrough closes with `</s>` too: only after a call)",
        ),
    ),
    "turn-ends": (
        Pattern(
            "chatml-turn-end",
            "token",
            "<|im_end|>",
            source="ChatML's turn end, after a call in LFM2's, Qwen's and Kimi K2's chat"
            " templates, passed on by a server that keeps special tokens",
        ),
        Pattern(
            "end-of-text",
            "token",
            "<|endoftext|>",
            source="the end-of-text token of Qwen's and GLM's tokenizers, after a call's turn"
            " as their templates render it",
        ),
    ),
    "deepseek": (*_deepseek(), *_dsml(), *_deepseek_turn_tokens()),
    "deepseek-xml": (
        *_dsml_stray_closers(),
        Pattern(
            "deepseek-bare-function-calls",
            "span",
            "<function_calls>",
            ends=("</function_calls>",),
            special=False,
            hint=seq(SPACE, Lit("<invoke name=")),
            source="DSML with its markers stripped: sglang deepseekv32_detector.py"
            ' ("Format 3 - Without DSML tags")',
        ),
        *(
            Pattern(
                name,
                "span",
                opener,
                ends=("</calls>", *_dsml_closers("calls")),
                special=False,
                hint=seq(SPACE, _DSML_INVOKE),
                source=source,
            )
            for name, opener, source in (
                (
                    "deepseek-bare-calls",
                    "<calls>",
                    "DSML's `calls` section with its markers stripped:"
                    " diegosouzapw/OmniRoute PR #13345",
                ),
                (
                    "deepseek-lost-bars-calls",
                    "< calls>",
                    "V4.1's `calls` opener that lost its bars and DSML, the invokes inside"
                    " still DSML: kittors/deepseek-web-api #11",
                ),
            )
        ),
        Pattern(
            "deepseek-bare-invoke",
            "span",
            "<invoke name=",
            ends=("</invoke>",),
            special=False,
            hint=seq(
                Lit('"'),
                NAME,
                Lit('">'),
                SPACE,
                alt(Lit("<parameter name="), Lit("</invoke>"), Lit("{")),
            ),
            source="DeepSeek V4 Flash's invoke with no DSML and no wrapper, from the official"
            " API: anomalyco/opencode #34676; sglang deepseekv32_detector.py (Format 4: JSON)",
        ),
    ),
    "harmony": (
        Pattern(
            "harmony-messages",
            "harmony",
            "<|channel|>",
            source="openai/harmony docs/format.md and its parser tests; llama.cpp"
            " tests/test-chat.cpp (GPT-OSS); sglang test/srt/test_harmony_parser.py;"
            f" {_VLLM}openai_tool_parser.py; TensorRT-LLM #9256; odysseus PR #4523",
        ),
    ),
    "harmony-residue": (
        Pattern(
            "harmony-analysis-residue",
            "span",
            "analysis",
            ends=("assistantfinal",),
            special=False,
            hint=Chars("[A-Z]", 1, 1),
            boundary="start",
            reasoning=True,
            source="gpt-oss with its special tokens stripped: Augustas11/macprovider #743;"
            " sglang test/srt/test_harmony_parser.py (test_parse_analysis_no_space_after_header)",
        ),
        *(
            Pattern(
                name,
                "json_value",
                opener,
                special=False,
                hint=HARMONY_RECIPIENT,
                boundary=boundary,
                trailers=("assistantfinal",),
                source=_HARMONY_CALL_RESIDUE,
            )
            for name, opener, boundary in _HARMONY_CALL_OPENERS
        ),
        Pattern(
            "harmony-next-analysis-residue",
            "span",
            "assistantanalysis",
            ends=("assistantfinal",),
            special=False,
            hint=Chars("[A-Z]", 1, 1),
            reasoning=True,
            source="gpt-oss's later analysis message with its tokens stripped, after a call:"
            " sglang python/sglang/srt/parser/harmony_parser.py (TextStrategy)",
        ),
        Pattern(
            "harmony-final-residue",
            "token",
            "assistantfinal",
            special=False,
            boundary="start",
            source="gpt-oss's final header with its tokens stripped, opening the reply: sglang"
            " python/sglang/srt/parser/harmony_parser.py (TextStrategy)",
        ),
    ),
    "llama": (
        Pattern(
            "llama3-python-tag",
            "span",
            "<|python_tag|>",
            ends=("<|eom_id|>", "<|eot_id|>"),
            json_strings="leading",
            source=f"{_VLLM}llama_tool_parser.py; exo PR #1588 (often EOS-terminated)",
        ),
        Pattern(
            "llama4-python",
            "span",
            "<|python_start|>",
            ends=("<|python_end|>",),
            source=f"{_VLLM}llama4_pythonic_tool_parser.py",
        ),
        *(
            Pattern(
                f"llama-end-{name}",
                "token",
                token,
                source="Meta llama-models models/llama3_1/prompt_format.md, llama3_2 and llama4"
                " (a call reply ends `<|eom_id|>` or `<|eot_id|>`; Llama 4's `<|eom|>`,"
                " `<|eot|>`), passed on by a server that keeps special tokens",
            )
            for name, token in (
                ("eot-id", "<|eot_id|>"),
                ("eom-id", "<|eom_id|>"),
                ("eot", "<|eot|>"),
                ("eom", "<|eom|>"),
            )
        ),
    ),
    "llama-json": (
        Pattern(
            "llama3-json-reply",
            "json_reply",
            "{",
            special=False,
            source="Meta llama-models models/llama3_1/prompt_format.md (JSON calls, joined by"
            f" '; '); {_VLLM}llama_tool_parser.py and its tests (llama3_json)",
        ),
    ),
    "llama-pythonic": (
        Pattern(
            "llama-pythonic-reply",
            "pythonic_reply",
            "[",
            special=False,
            source="Meta llama-models models/llama3_2 and llama4 prompt formats ([func(a=1), ...]"
            f" as the whole reply); {_VLLM}pythonic_tool_parser.py, llama4_pythonic_tool_parser.py"
            " and their tests",
        ),
    ),
    "kimi": (
        Pattern(
            "kimi-tool-calls-section",
            "span",
            "<|tool_calls_section_begin|>",
            ends=("<|tool_calls_section_end|>", "<|tool_call_section_end|>"),
            json_strings="always",
            source=f"{_VLLM}kimi_k2_tool_parser.py; MoonshotAI/Kimi-K2 #26",
        ),
        Pattern(
            "kimi-tool-call-section",
            "span",
            "<|tool_call_section_begin|>",
            ends=("<|tool_call_section_end|>", "<|tool_calls_section_end|>"),
            json_strings="always",
            source="Kimi K2's singular section token: ggml-org/llama.cpp PR #17376 (review)",
        ),
        Pattern(
            "kimi-tool-call-arguments",
            "span",
            "<|tool_call_argument_begin|>",
            ends=("<|tool_call_end|>", "<|tool_calls_section_end|>", "<|tool_call_section_end|>"),
            json_strings="always",
            source="Kimi K2's arguments with their section and call tokens lost, leaked through"
            " Fireworks: typeclaw/typeclaw PR #344 (the call's `name:0` before them stays)",
        ),
        Pattern(
            "kimi-tool-call",
            "span",
            "<|tool_call_begin|>",
            ends=("<|tool_call_end|>",),
            json_strings="always",
            source=f"{_VLLM}kimi_k2_tool_parser.py; vllm PR #31207",
        ),
        Pattern(
            "kimi-k3-tools",
            "span",
            "<|open|>tools<|sep|>",
            ends=("<|close|>tools<|sep|>",),
            source="vllm vllm/frontend/processing/tool_parsers/kimi_k3_tool_parser.py;"
            " sglang python/sglang/srt/function_call/kimik3_format.py",
        ),
        Pattern(
            "kimi-k3-message-close",
            "token",
            "<|close|>message<|sep|>",
            source="vllm tests/tool_parsers/test_kimi_k3_tool_parser.py"
            " (test_streaming_content_holds_split_message_close)",
        ),
        *(
            Pattern(
                f"kimi-k3-response-{edge}",
                "token",
                f"<|{edge}|>response<|sep|>",
                source="vllm PR #51400 (response_open, response_close and message_close"
                " stripped from content); NousResearch/hermes-agent #73491",
            )
            for edge in ("open", "close")
        ),
        Pattern(
            "kimi-k3-call",
            "span",
            "<|open|>call",
            ends=("<|close|>call<|sep|>",),
            hint=Lit(' tool="'),
            source="Kimi K3's call without its tools section: sglang"
            " test/srt/test_kimik3_detector.py (test_markers_only_strip_keeps_reasoning_text);"
            " `<|open|>call` with no attributes is shown (test_quoted_call_token_without_"
            "attributes_survives)",
        ),
        Pattern(
            "kimi-k3-end-of-message",
            "token",
            "<|end_of_msg|>",
            source="Kimi K3's chat template ends every message"
            " `<|close|>message<|sep|><|end_of_msg|>` (ggml-org/llama.cpp"
            " models/templates/Kimi-K3.jinja)",
        ),
        Pattern(
            "kimi-k3-think",
            "span",
            "<|open|>think<|sep|>",
            ends=("<|close|>think",),
            trailers=("<|sep|>",),
            reasoning=True,
            source="Kimi K3's thinking channel in content (sgl-project/sglang PR #32567): its"
            " body is reasoning, never the answer",
        ),
        Pattern(
            "kimi-k3-think-close",
            "token",
            "<|close|>think",
            trailers=("<|sep|>",),
            source="Kimi K3's thinking close with its opener in the prompt (sgl-project/sglang"
            " PR #32567: raw output of a live server)",
        ),
    ),
    "minimax": (
        Pattern(
            "minimax-m2-tool-call",
            "span",
            "<minimax:tool_call>",
            ends=("</minimax:tool_call>",),
            special=False,
            hint=seq(SPACE, Lit("<invoke")),
            source=f"{_VLLM}minimax_m2_tool_parser.py; earendil-works/pi #368; "
            "MiniMax-AI/MiniMax-M2.5 #10",
        ),
        Pattern(
            "minimax-bracket-tool-call",
            "span",
            "[TOOL_CALL]",
            ends=("[/TOOL_CALL]",),
            special=False,
            hint=seq(SPACE, Lit("{")),
            json_strings="leading",
            source="MiniMax-M2 variant: lmstudio-ai/lmstudio-bug-tracker #1177",
        ),
        Pattern(
            "minimax-m3-tool-call",
            "span",
            "]<]minimax[>[",  # the token alone: Hermes' `<tool_call>` after it is an opener too
            ends=("]<]minimax[>[</tool_call>",),
            hint=Lit("<tool_call>"),
            source="llama.cpp tests/test-chat.cpp (MiniMax-M3 tests) and"
            " models/templates/MiniMax-M3.jinja: every tag behind the `]<]minimax[>[` token",
        ),
    ),
    "minimax-m1": (
        Pattern(
            "minimax-m1-tool-calls",
            "span",
            "<tool_calls>",
            ends=("</tool_calls>",),
            special=False,
            hint=JSON_BODY,
            json_strings="leading",
            source=f"{_VLLM}minimax_tool_parser.py, jamba_tool_parser.py",
        ),
    ),
    "internlm": (
        Pattern(
            "internlm-action",
            "span",
            "<|action_start|>",
            ends=("<|action_end|>",),
            json_strings="always",
            source=f"{_VLLM}internlm2_tool_parser.py",
        ),
    ),
    "cohere": (
        Pattern(
            "cohere-action",
            "span",
            "<|START_ACTION|>",
            ends=("<|END_ACTION|>",),
            json_strings="always",
            source=f"{_VLLM}command_tool_parser.py",
        ),
    ),
    "gemma": (
        Pattern(
            "gemma4-tool-call",
            "span",
            "<|tool_call>",
            ends=("<tool_call|>", "<turn|>"),
            quotes=('<|"|>',),
            source=f"{_VLLM}gemma4_tool_parser.py; closed by the turn's end:"
            " vllm tests/tool_parsers/test_gemma4_regex_and_bare_calls.py; strings between"
            ' `<|"|>` quotes, as its chat template writes arguments (a quoted closer is data)',
        ),
        Pattern(
            "gemma4-thought",
            "span",
            "<|channel>thought",
            ends=("<channel|>",),
            reasoning=True,
            source="Gemma 4's thinking channel (its chat template: `<|channel>thought` ..."
            " `<channel|>`; vllm's gemma4 reasoning parser): its body is reasoning, never the"
            " answer",
        ),
        Pattern(
            "gemma4-stray-channel-close",
            "token",
            "<channel|>",
            source="Gemma 4's channel closer with no channel open: llama.cpp tests/test-chat.cpp"
            " (Gemma 4 edge cases: `Hello...<channel|>` is the message alone)",
        ),
        Pattern(
            "gemma4-turn-end",
            "token",
            "<turn|>",
            source="Gemma 4's turn end after a call (its chat template), passed on by a server"
            " that keeps special tokens",
        ),
        Pattern(
            "gemma4-stray-call-close",
            "token",
            "<tool_call|>",
            source="Gemma 4's call closer with no call open: ollama model/parsers/gemma4_test.go"
            " (extra close tags)",
        ),
        Pattern(
            "gemma4-tool-response",
            "span",
            "<|tool_response>",
            ends=("<tool_response|>",),
            quotes=('<|"|>',),
            source="Gemma 4's tool response written by the model after its call, a stop token a"
            " server passed on (ollama model/parsers/gemma4_test.go,"
            " IgnoresToolResponseBoundaryAfterToolCall): a made-up result, not the answer",
        ),
    ),
    "gemma-plain": (
        Pattern(
            "functiongemma-call",
            "span",
            "<start_function_call>",
            ends=("<end_function_call>",),
            special=False,
            quotes=("<escape>",),
            source="vllm .../functiongemma_tool_parser.py (strings between `<escape>` quotes)",
        ),
        Pattern(
            "gemma-bare-call",
            "braced",
            "call:",
            special=False,
            hint=seq(NAME, Lit("{"), Chars("[A-Za-z_}]", 1, 1)),
            boundary="word",
            quotes=('<|"|>', "<escape>"),
            source="Gemma 4 / FunctionGemma body without its wrapper tokens: vllm PR #45832, "
            "Gitlawb/openclaude PR #380",
        ),
        Pattern(
            "functiongemma-response",
            "span",
            "<start_function_response>",
            ends=("<end_function_response>",),
            special=False,
            quotes=("<escape>",),
            source="FunctionGemma's function response written by the model after its call (its"
            " docs: `<start_function_response>` is an extra stop sequence): a made-up result",
        ),
        Pattern(
            "gemma-end-of-turn",
            "token",
            "<end_of_turn>",
            source="Gemma 3's turn end (its chat template), passed on by a server that keeps"
            " special tokens",
        ),
    ),
    "seed-oss": (
        Pattern(
            "seed-oss-tool-call",
            "span",
            "<seed:tool_call>",
            ends=("</seed:tool_call>",),
            special=False,
            hint=seq(SPACE, Lit("<function=")),
            source=f"{_VLLM}seed_oss_tool_parser.py",
        ),
    ),
    "nemotron": (
        Pattern(
            "nemotron-toolcall",
            "span",
            "<TOOLCALL>",
            ends=("</TOOLCALL>",),
            special=False,
            hint=JSON_BODY,
            json_strings="leading",
            source=f"{_VLLM}nemotron_json_tool_parser.py",
        ),
    ),
    "glm": (
        Pattern(
            "glm-user",
            "token",
            "<|user|>",
            source="GLM-4.5+ chat templates: the next turn's header after an answer, one of its"
            " stop tokens (ggml-org/llama.cpp models/templates/glm_4_5.jinja, GLM-4.6.jinja)",
        ),
        Pattern(
            "glm-observation",
            "token",
            "<|observation|>",
            source="GLM-4.5+ chat template (a call turn ends `<|observation|>`, the token the"
            " model stops on); a GLM-4.5 parser test of real output",
        ),
        Pattern(
            "glm-bare-arguments",
            "span",
            "<arg_key>",
            ends=("</arg_value>",),
            special=False,
            hint=seq(Chars("[^<>\n]", 1, 64), Lit("</arg_key>"), SPACE, Lit("<arg_value>")),
            source="GLM-5 key/value pairs outside <tool_call>: zai-org/GLM-5 #84; "
            f"{_VLLM}glm4_moe_tool_parser.py",
        ),
    ),
    "echo": (
        Pattern(
            "transcript-echo",
            "span",
            "[Calling tool:",
            ends=(")]",),
            special=False,
            hint=seq(Chars("[ ]", 0, 2), NAME, Lit("(")),
            source="a model imitating its transcript: raullenchai/Rapid-MLX PR #1592, PR #102",
        ),
    ),
}

OPT_IN: tuple[str, ...] = ("echo",)
"""Profiles only a named setting turns on: never `auto`, never `all`."""


def registry_with(*profiles: str, base: Registry = DEFAULT_REGISTRY) -> Registry:
    """`base` plus the named profiles. A later pattern with the same opener replaces one:
    profiles are applied in PROFILES' order, whatever order they are named in, so that
    `qwen3-coder`'s `<function=` always wins over the narrower one of `hermes` and
    `function-tag`."""
    unknown = [p for p in profiles if p not in PROFILES]
    if unknown:
        raise ValueError(f"unknown profile(s) {', '.join(unknown)}; known: {', '.join(PROFILES)}")
    by_start = {pattern.start: pattern for pattern in base}
    for name in (p for p in PROFILES if p in profiles):
        by_start.update((pattern.start, pattern) for pattern in PROFILES[name])
    return tuple(by_start.values())
