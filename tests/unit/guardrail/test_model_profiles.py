"""`--profiles auto`: model names as servers report them -> profiles, the markers'
classification, the bounded matching and the setting's parser."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from guardrail.model_profiles import (
    AUTO,
    FAMILIES,
    MARKER_CLASS,
    NAME_CAP,
    SPECIAL_PROFILES,
    ProfileChoice,
    families_of,
    parse_profiles,
    profiles_for,
    registry_for,
)
from guardrail.registries import DEFAULT_REGISTRY, OPT_IN, PROFILES, registry_with

from ..helpers.scaffolding import strip

# A special token's delimiters no prose writes: `<|` `|>`, DeepSeek's fullwidth bar, and the
# DSML name between the bars models mangle it into (U+2016, ASCII).
TOKEN_SPELLINGS = ("<|", "|>", "\uff5c", "\u2016DSML\u2016", "|DSML|", "| DSML |")

MODEL_NAMES = [
    ("lfm2-1.2b", ()),
    ("LiquidAI/LFM2-8B-A1B-GGUF", ()),
    ("qwen3:8b", ("hermes", "qwen3-coder", "llama-json")),
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", ("hermes", "qwen3-coder", "llama-json")),
    ("qwen3-coder:30b", ("hermes", "qwen3-coder")),
    ("gemma3:4b", ("gemma-plain", "llama-json", "llama-pythonic")),
    ("google/functiongemma-270m-it", ("gemma-plain", "llama-json", "llama-pythonic")),
    ("deepseek-r1:7b", ("deepseek", "deepseek-xml")),
    ("gpt-oss:20b", ("harmony", "harmony-residue")),
    ("openai/gpt-oss-120b", ("harmony", "harmony-residue")),
    ("mistral-small3.2", ("mistral",)),
    ("magistral:24b", ("mistral",)),
    ("devstral", ("mistral",)),
    ("llama3.1:8b", ("llama-json", "llama-pythonic", "function-tag")),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", ("llama-json", "llama-pythonic", "function-tag")),
    ("kimi-k2", ("kimi",)),
    ("glm-4.6", ("hermes", "glm")),
    ("zai-org/GLM-5", ("hermes", "glm")),
    ("MiniMaxAI/MiniMax-M2", ("minimax", "minimax-m1")),
    ("ai21labs/AI21-Jamba-Mini-1.7", ("minimax-m1",)),
    ("Qwen/Qwen3.5-35B-A3B", ("hermes", "qwen3-coder", "llama-json")),
    ("granite3.3:8b", ("hermes",)),
    ("phi4-mini", ()),
    ("ByteDance-Seed/Seed-OSS-36B-Instruct", ("seed-oss",)),
    ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", ("nemotron", "hermes", "qwen3-coder")),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", ("nemotron", "hermes", "qwen3-coder")),
    ("stepfun-ai/Step-3.5-Flash", ("hermes", "qwen3-coder")),
    ("inclusionAI/Ling-flash-2.0", ("hermes", "glm")),
    ("linguist-7b", ()),  # Ling's key is `ling-`
    ("RekaAI/reka-edge-2603", ("hermes",)),
    ("XiaomiMiMo/MiMo-VL-7B-RL", ("hermes",)),
    ("ServiceNow-AI/Apriel-1.6-15b-Thinker", ("minimax-m1",)),
    ("hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M", ("hermes", "qwen3-coder", "llama-json")),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", ("hermes", "qwen3-coder", "llama-json")),
    ("qwen3.6:35b-a3b", ("hermes", "qwen3-coder", "llama-json")),
    ("hf.co/unsloth/gemma-3-4b-it-GGUF:Q4_K_M", ("gemma-plain", "llama-json", "llama-pythonic")),
    ("my-local-model", ()),
    ("ollama", ()),  # `llama` only at a word start
    ("", ()),
]


@pytest.mark.parametrize(("model", "family_profiles"), MODEL_NAMES)
def test_a_model_name_gets_the_special_profiles_and_its_familys(
    model: str, family_profiles: tuple[str, ...]
):
    assert profiles_for(model) == tuple(dict.fromkeys((*SPECIAL_PROFILES, *family_profiles)))


@pytest.mark.parametrize("model", [None, 7, ["qwen3:8b"], {"name": "qwen"}, True])
def test_a_missing_or_non_string_model_gets_the_special_profiles_only(model: object):
    assert profiles_for(model) == SPECIAL_PROFILES


def test_every_profile_has_a_marker_class():
    assert set(MARKER_CLASS) == set(PROFILES)


@pytest.mark.parametrize("profile", [p for p, c in MARKER_CLASS.items() if c == "special"])
def test_a_special_profile_has_only_special_token_spellings(profile: str):
    for pattern in PROFILES[profile]:
        assert pattern.special
        for marker in (pattern.start, *pattern.ends):
            assert any(t in marker for t in TOKEN_SPELLINGS), marker


def test_every_names_registry_opens_only_on_the_one_character_its_clean_path_tests():
    """The special profiles (every name's) all open on `<`: a chunk without one is shown by a
    single `in` test, whatever the name (a `[` among them cost 67 to 905 ns a small feed,
    benchmarks/filter_registries.py; docs/contract.md, "Deliberate limits")."""
    assert {pattern.start[0] for pattern in registry_for("my-local-model")} == {"<"}


@pytest.mark.parametrize("profile", [p for p, c in MARKER_CLASS.items() if c == "look-alike"])
def test_a_look_alike_profile_has_a_marker_prose_could_write(profile: str):
    starts = [p.start for p in PROFILES[profile]]
    assert any(not any(t in s for t in TOKEN_SPELLINGS) for s in starts), starts


@pytest.mark.parametrize("model", ["my-local-model", "", "lfm2-1.2b", None])
def test_an_unknown_name_never_gets_a_look_alike_profile(model: object):
    assert all(MARKER_CLASS[p] == "special" for p in profiles_for(model))


def test_an_opt_in_profile_is_never_chosen_by_a_name():
    names = [model for model, _ in MODEL_NAMES] + [f"{k}-echo" for f in FAMILIES for k in f.keys]
    assert not any(set(profiles_for(name)) & set(OPT_IN) for name in names)
    assert not any(set(f.profiles) & set(OPT_IN) for f in FAMILIES)


def test_every_family_maps_to_known_profiles():
    for family in FAMILIES:
        assert set(family.profiles) <= set(PROFILES), family.name


def test_lfm2_markup_is_in_every_auto_registry():
    for model, _ in MODEL_NAMES:
        starts = {p.start for p in registry_for(model)}
        assert {p.start for p in DEFAULT_REGISTRY} <= starts


def test_nemotron_3_nanos_qwen3_coder_call_is_stripped_for_a_nemotron_name():
    # llama.cpp tests/test-chat.cpp, "NVIDIA Nemotron-3 Nano" (and common/chat.cpp: Qwen3-Coder
    # XML tool calls "also used by Nemotron Nano 3")
    call = (
        "<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n"
        "</function>\n</tool_call>\n"
    )
    text = f"I'll check.\n{call}It is done."
    nemotron = registry_for("NVIDIA-Nemotron-3-Nano-30B-A3B")
    assert strip(text, nemotron) == "I'll check.\n\nIt is done."
    assert strip(text, registry_for("lfm2-1.2b")) == text


def test_qwen_tool_call_is_stripped_for_qwen_and_kept_for_lfm2():
    text = 'Sure.<tool_call>{"name": "read", "arguments": {}}</tool_call> Done.'
    assert strip(text, registry_for("qwen3:8b")) == "Sure. Done."
    assert strip(text, registry_for("lfm2-1.2b")) == text


def test_a_special_token_leak_is_stripped_under_an_unknown_name():
    [calls, *_] = PROFILES["deepseek"]
    text = f"Ok.{calls.start}x{calls.ends[0]} Fine."
    assert strip(text, registry_for("my-local-model")) == "Ok. Fine."


def test_a_family_key_past_the_cap_is_not_seen():
    assert profiles_for("x" * (NAME_CAP - 4) + "-qwen") == SPECIAL_PROFILES
    assert profiles_for("x" * (NAME_CAP - 5) + "-qwen") == (
        *SPECIAL_PROFILES,
        "hermes",
        "qwen3-coder",
        "llama-json",
    )


def test_a_hostile_name_is_answered_fast_and_safely():
    hostile = "\x00\x1b[31m\r\n" * 10 + "qwen" + "\u202e" * (10 * 1024 * 1024)
    began = time.perf_counter()
    assert profiles_for(hostile) == (*SPECIAL_PROFILES, "hermes", "qwen3-coder", "llama-json")
    assert profiles_for("\x00" * (10 * 1024 * 1024)) == SPECIAL_PROFILES
    assert time.perf_counter() - began < 1.0


def test_the_same_name_gets_the_same_cached_registry():
    assert registry_for("qwen3:8b") is registry_for("qwen3:8b")
    assert families_of("QWEN3:8B") == families_of("qwen3:8b")


@pytest.mark.parametrize(
    ("text", "choice"),
    [
        ("auto", AUTO),
        (" auto ", AUTO),
        ("none", ProfileChoice(auto=False)),
        ("", ProfileChoice(auto=False)),
        (
            "all",
            ProfileChoice(
                auto=False, names=tuple(p for p in PROFILES if p not in OPT_IN), every=True
            ),
        ),
        ("echo", ProfileChoice(auto=False, names=("echo",))),
        ("hermes, mistral,hermes", ProfileChoice(auto=False, names=("hermes", "mistral"))),
    ],
)
def test_a_profiles_setting_is_parsed(text: str, choice: ProfileChoice):
    assert parse_profiles(text) == choice


@pytest.mark.parametrize("text", ["lfm3", "hermes,lfm3", "auto,hermes", "all,none"])
def test_an_unknown_profiles_setting_names_the_known_ones(text: str):
    with pytest.raises(ValueError, match=r"unknown profile\(s\) .*known: auto, none, all, "):
        parse_profiles(text)


def test_a_fixed_choice_ignores_the_model_name():
    fixed = parse_profiles("mistral")
    assert fixed.registry("qwen3:8b") == registry_with("mistral")
    assert parse_profiles("none").registry("qwen3:8b") == DEFAULT_REGISTRY
    assert AUTO.registry("qwen3:8b") == registry_for("qwen3:8b")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("", "none"),
        ("all", "all"),
        ("kimi,hermes", "kimi,hermes"),
    ],
)
def test_a_choice_reads_back_as_its_setting(text: str, shown: str):
    assert str(parse_profiles(text)) == shown


def test_several_names_get_the_union_of_their_profiles():
    assert profiles_for("my-alias", "qwen3-coder:30b", "gemma3:4b") == (
        *SPECIAL_PROFILES,
        "hermes",
        "qwen3-coder",
        "gemma-plain",
        "llama-json",
        "llama-pythonic",
    )
    assert registry_for("my-alias", "qwen3:8b") == registry_for("qwen3:8b")


def test_no_name_at_all_gets_the_special_profiles_only():
    assert profiles_for() == SPECIAL_PROFILES


@pytest.mark.parametrize(
    ("models", "described"),
    [
        (("Qwen/Qwen3-Coder-30B-A3B-Instruct",), "auto:Qwen3-Coder,Qwen"),
        (("my-alias", "gemma3:4b", "qwen3:8b"), "auto:Qwen,Gemma"),
        (("my-local-model",), "auto:unknown"),
        ((None,), "auto:unknown"),
        ((), "auto:unknown"),
    ],
)
def test_auto_describes_itself_by_the_families_the_names_matched(
    models: tuple[object, ...], described: str
):
    assert AUTO.describe(*models) == described


@pytest.mark.parametrize(
    ("text", "described"), [("none", "none"), ("all", "all"), ("hermes,kimi", "hermes,kimi")]
)
def test_a_fixed_choice_describes_itself_as_its_setting_whatever_the_model(
    text: str, described: str
):
    assert parse_profiles(text).describe("qwen3:8b") == described


def test_a_family_name_is_one_log_field():
    assert all(family.name and not any(c.isspace() for c in family.name) for family in FAMILIES)


def auto_table() -> str:
    rows = [
        "| family | the name contains, at a word start | profiles added | note |",
        "| --- | --- | --- | --- |",
    ]
    for f in FAMILIES:
        keys = ", ".join(f"`{k}`" for k in f.keys)
        profiles = ", ".join(f"`{p}`" for p in f.profiles) or "(none)"
        rows.append(f"| {f.name} | {keys} | {profiles} | {f.note} |")
    return "\n".join(rows)


def test_the_contract_documents_the_auto_table_and_the_classes():
    contract = (Path(__file__).parents[3] / "docs" / "contract.md").read_text(encoding="utf-8")
    assert auto_table() in contract
    for profile, marker_class in MARKER_CLASS.items():
        assert f"| `{profile}` | {marker_class} |" in contract


def test_the_wider_function_tag_wins_whatever_order_the_profiles_are_named_in():
    """Regression: `hermes` and `qwen3-coder` each bring a `<function=` pattern; named in
    either order, the registry keeps Qwen3-Coder's, which also reads its XML body."""
    xml = "a<function=f>\n<parameter=p>\nv\n</parameter>\n</function>b"
    for profiles in (("hermes", "qwen3-coder"), ("qwen3-coder", "hermes", "function-tag")):
        assert strip(xml, registry_with(*profiles)) == "ab"
    assert strip(xml, registry_with("hermes")) == xml
