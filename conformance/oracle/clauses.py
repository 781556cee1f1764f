"""The contract clauses the kit checks: ids, what each demands, and whether it is optional.

Core clauses hold for every chat app that streams a model's answer and never skip. An
optional clause needs a capability the target's profile must declare (a thinking display,
a stop control, a readable log, document tools); a profile that does not declare it skips
the clause with the reason, never guesses it. A clause judged by model (G13, G15) judges
each family flow by the model name the app asks for, and skips, with the reason, the flows
the other one judges. CASE runs the user's own cases (`--cases`, a
recorded leak for one): one test per flow of theirs that states an outcome.

Beside the clauses: the contract's fixed strings and markers, and the flows the clauses
with one test per flow are judged on.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.profiles.model import Capability

MALFORMED_REPLY = "The model returned a malformed reply — please try again."
"""The contract's error copy for a reply that stayed markup after the one recovery (G3)."""
CORRECTION = (
    "Your previous reply contained raw tool-call markup, which is not interpreted here."
    " Answer the user's question directly in plain text — no tool syntax."
)
"""The contract's correction line, which the one recovery request carries (G2)."""
MARKERS = ("<|tool_call_start|>", "<|tool_call_end|>", "<|tool_calls|>", "<|tool_call|>")
"""The markup's markers NEVER looks for in everything a page showed (besides each flow's
canary)."""
SCAFFOLD_FLOWS = ("scaffold-recover", "scaffold-split", "scaffold-repeat", "scaffold-mixed",
                  "scaffold-standalone", "unterminated")  # fmt: skip
"""The mock's scaffold flows: NEVER judges each."""
FAMILY_FLOWS = ("deepseek-dsml", "deepseek-dsml-bars", "deepseek-dsml-v41", "gemma-bare-call",
                "gemma-tool-call", "qwen-tool-call", "qwen-quoted-marker",
                "qwen3-coder-bare-function", "seed-oss-tool-call", "nemotron-toolcall",
                "glm-bare-arguments", "minimax-xml-call", "harmony-residue",
                "harmony-messages", "mistral-call-then-prose", "kimi-k3-tools",
                "llama-json-call", "deepseek-bare-invoke", "llama-pythonic-call",
                "deepseek-v3-call", "llama-python-tag", "kimi-k2-section",
                "harmony-call-residue", "minimax-m3-call", "qwen-function-tag")  # fmt: skip
"""The mock's family flows: each plays one model family's own leak shape (G13)."""
SPECIAL_FLOWS = ("deepseek-dsml", "deepseek-dsml-bars", "deepseek-dsml-v41", "gemma-tool-call",
                 "kimi-k3-tools", "harmony-messages", "deepseek-v3-call", "llama-python-tag",
                 "kimi-k2-section")  # fmt: skip
"""The family flows whose markup is special tokens, stripped for every model."""
LOOKALIKE_FLOWS = (*(f for f in FAMILY_FLOWS if f not in SPECIAL_FLOWS), "echo-call")
"""The flows whose markup is text for some models (G15): the family flows that state an
`elsewhere` outcome (special tokens are stripped for every model), and the transcript echo,
which reads like prose and is stripped only where a user opts in."""


@dataclass(frozen=True)
class Clause:
    id: str
    title: str
    needs: Capability | None = None  # None: a core clause
    on_request: bool = False
    """Run only for what the user hands the kit (`--cases`), and reported only when it ran."""
    by_model: bool = False
    """Judged flow by flow as the app's model name asks (family flows): a flow the model
    does not apply to skips, with the reason, and another clause judges it."""

    @property
    def core(self) -> bool:
        return self.needs is None


CLAUSES: tuple[Clause, ...] = (
    Clause("G1", "clean turns pass through unchanged, one upstream request, no correction"),
    Clause("G2", "a scaffold-only round gets exactly one corrected recovery request"),
    Clause("G3", "an empty recovery ends the turn with the malformed-reply error state"),
    Clause("G4", "scaffolding mixed with content: the clean remainder, no recovery"),
    Clause("G5", "scaffolding split across chunks at any offset is stripped the same"),
    Clause("G6", "the standalone tokens <|tool_calls|> and <|tool_call|> are stripped"),
    Clause("G7", "look-alikes are never stripped"),
    Clause("G8", "a partial start token at stream end is shown; an unterminated span is cut"),
    Clause("G9", "thinking (reasoning) text is shown raw, never filtered", needs="thinking"),
    Clause("G10", "the per-turn log line ends scaffold_stripped=N, N exact", needs="log"),
    Clause("G11", "stop generation closes the upstream stream", needs="stop"),
    Clause("G12", "a round with a real tool call needs no recovery", needs="tools"),
    Clause(
        "G13",
        "a model family's own leak shape is stripped for a model of that family",
        by_model=True,
    ),
    Clause("G14", "a real tool call next to stripped markup is still run", needs="tools"),
    Clause(
        "G15",
        "another family's markup and prose like it are shown whole, never swallowed",
        by_model=True,
    ),
    Clause("NEVER", "raw scaffolding never appears in the page, not even for a moment"),
    Clause(
        "CASE", "a recorded case (--cases) ends as its flow's expect block says", on_request=True
    ),
)

BY_ID = {clause.id: clause for clause in CLAUSES}
